// Roles: the built-in ones (read-only: they change only with the service) and the
// organization's custom ones, created and edited with the permission picker, each with the
// number of members holding it (GET /organizations/{orgId}/members/stats). A custom role that
// members hold cannot be deleted; the API says so and the dialog shows it.
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { Pencil, Plus, Trash2 } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty, Forbidden } from "../ui/states";
import { ManagedGate, ManagedMark } from "../ui/ManagedMark";
import { useAction } from "../ui/useAction";
import { MembersArea } from "../members/MembersTabs";
import { PermissionChips } from "./PermissionChips";
import { expandPermissions, PermissionPicker, permissionCatalogueQuery } from "./PermissionPicker";

type Role = RouterOutputs["roles"]["list"]["items"][number];

export function RolesPage() {
  const session = useSession();
  const canRead = useCan("roles:read");
  const canWrite = useCan("roles:write");
  const canCount = useCan("members:read");
  const [editing, setEditing] = useState<Role | "new" | null>(null);
  const [deleting, setDeleting] = useState<Role | null>(null);
  const remove = useAction({ mutationFn: () => q.roles.delete.call({ id: deleting!.id }) }, {
    invalidates: [q.roles.key()],
    success: () => `Role “${deleting?.name ?? ""}” deleted`,
  });
  // Built-in roles come first, then the custom ones by name; an organization has a handful.
  const roles = useQuery({ ...q.roles.list.options({ limit: 200, offset: 0 }), enabled: canRead });
  const stats = useQuery({ ...q.members.stats.options({ orgId: session.organization.id }), enabled: canRead && canCount });
  const holders = new Map(stats.data?.byRole.map((r) => [r.roleId, r.count]));

  const columns: Column<Role>[] = [
    {
      id: "name",
      header: "Role",
      cell: (r) => (
        <div className="stacked-cell">
          <strong>{r.name} {r.system ? <span className="badge">built-in</span> : <span className="badge badge--accent">custom</span>} <ManagedMark resource={r} /></strong>
          {r.description && <span className="faint">{r.description}</span>}
        </div>
      ),
    },
    { id: "permissions", header: "Permissions", cell: (r) => <PermissionChips permissions={r.permissions} /> },
    ...(canCount ? [{ id: "members", header: "Members", className: "num", cell: (r: Role) => <span className="num">{stats.data ? holders.get(r.id) ?? 0 : "…"}</span> }] : []),
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (r: Role) => !r.system && (
        <ManagedGate resource={r}>
          <div className="row row--nowrap">
            <Button size="small" icon={<Pencil />} onClick={() => setEditing(r)} aria-label={`Edit role ${r.name}`}>Edit</Button>
            <Button size="small" icon={<Trash2 />} onClick={() => setDeleting(r)} aria-label={`Delete role ${r.name}`}>Delete</Button>
          </div>
        </ManagedGate>
      ),
    }] : []),
  ];

  const createButton = canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setEditing("new")}>Create role</Button>;
  if (!canRead) return <MembersArea description="What each role may do."><Forbidden what="the roles" /></MembersArea>;

  return (
    <MembersArea description="What each role may do. Built-in roles are the same in every organization and cannot be changed; custom roles are this organization's own." actions={createButton}>
      <Card title="Roles" flush>
        <QueryTable query={roles} what="the roles" caption="Roles" columns={columns} rowKey={(r) => r.id} loadingRows={4} empty={<Empty title="No roles" />} />
      </Card>
      {editing !== null && <RoleDialog role={editing === "new" ? null : editing} onClose={() => setEditing(null)} />}
      <ConfirmDialog
        open={deleting !== null}
        onClose={() => setDeleting(null)}
        title={`Delete role “${deleting?.name ?? ""}”?`}
        confirmLabel="Delete role"
        action={remove}
      >
        <p>The role is gone for good. A role that members hold, or that a pending invitation offers, cannot be deleted.</p>
      </ConfirmDialog>
    </MembersArea>
  );
}

/** Create (role null) or edit a custom role. */
function RoleDialog({ role, onClose }: { role: Role | null; onClose: () => void }) {
  const session = useSession();
  const catalogue = useQuery(permissionCatalogueQuery());
  const [name, setName] = useState(role?.name ?? "");
  const [description, setDescription] = useState(role?.description ?? "");
  const [chosen, setChosen] = useState<Set<string> | null>(null);
  const save = useAction({
    mutationFn: (fields: { name: string; description: string; permissions: string[] }) => (role ? q.roles.update.call({ id: role.id, ...fields }) : q.roles.create.call(fields)),
  }, {
    invalidates: [q.roles.key()],
    success: (saved) => `Role “${saved.name}” ${role ? "saved" : "created"}`,
    onSuccess: onClose,
  });
  // A stored wildcard shows as the permissions it grants today (saved as those keys).
  const permissions = chosen ?? (catalogue.data ? expandPermissions(role?.permissions ?? [], catalogue.data.items) : new Set<string>());
  const held = new Set(session.permissions);

  return (
    <Dialog open wide onClose={onClose} title={role ? `Edit role “${role.name}”` : "Create a role"}>
      <form className="stack" onSubmit={save.submit(() => ({ name: name.trim(), description: description.trim(), permissions: [...permissions] }))}>
        <div className="grid grid--2">
          <div className="field">
            <label htmlFor="role-name">Name</label>
            <input id="role-name" className="input" required minLength={2} maxLength={50} value={name} onChange={(e) => setName(e.target.value)} placeholder="deployer" />
          </div>
          <div className="field">
            <label htmlFor="role-description">Description <span className="faint">(optional)</span></label>
            <input id="role-description" className="input" maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} />
          </div>
        </div>
        <PermissionPicker idPrefix="role-permission" legend="Permissions" value={permissions} onChange={setChosen} offered={(key) => held.has(key)} />
        <FormFooter action={save} onCancel={onClose} disabled={name.trim().length < 2 || !catalogue.data} submitLabel={role ? "Save role" : "Create role"} />
      </form>
    </Dialog>
  );
}
