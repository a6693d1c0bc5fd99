// Every organization of the platform, for Super Admins: each with its statistics (members,
// devices, deployments; one query for the page: GET /organizations/with-stats), created,
// edited, suspended, disabled, restored and deleted. Deleting asks the API's can-delete check
// first and names what still blocks it (devices, deployments, acting in it) instead of offering
// a button that can only fail.
import { useEffect, useState, type ReactNode } from "react";
import { useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Ban, Pause, Pencil, Plus, RotateCcw, Trash2 } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty, ErrorBox, Forbidden, Loading } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useDebounced } from "../ui/useDebounced";
import { STATUS_TONE } from "./OrganizationSettingsPage";
import { ORGANIZATION_STATUSES } from "./search";
import "./organizations.css";
import "../users/platform.css";
import { counted } from "../../../src/lib/plural";

type Organization = RouterOutputs["organizations"]["withStats"]["items"][number];
type StatusMove = "suspend" | "disable" | "enable";

const PAGE = 25;

/** What an organization's change touches: the list, and the names in the header and the switcher. */
const ORGANIZATION_KEYS = () => [q.organizations.key(), q.tenant.key()];

/** The status moves the service accepts from each status (src/modules/organizations/status.ts). */
export function movesFrom(status: Organization["status"]): StatusMove[] {
  switch (status) {
    case "active": return ["suspend", "disable"];
    case "pending": return ["enable", "suspend", "disable"];
    case "suspended": return ["enable", "disable"];
    case "disabled": return ["enable"];
  }
}

const MOVE: Record<StatusMove, { label: string; icon: ReactNode; text: string }> = {
  suspend: { label: "Suspend", icon: <Pause />, text: "Its members and API keys stop working until it is restored; nothing is deleted. For a temporary stop (billing, abuse review)." },
  disable: { label: "Disable", icon: <Ban />, text: "Its members and API keys stop working; nothing is deleted. Restoring it brings everything back." },
  enable: { label: "Restore", icon: <RotateCcw />, text: "Its members and API keys work again." },
};

export function OrganizationsPage() {
  if (!useCan("platform:admin")) return <><PageHeader title="Organizations" /><Forbidden what="the platform's organizations" /></>;
  return <OrganizationList />;
}

function OrganizationList() {
  const search = useSearch({ from: "/app/platform/organizations" });
  const navigate = useNavigate({ from: "/platform/organizations" });
  const [text, setText] = useState(search.search ?? "");
  const typed = useDebounced(text.trim());
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<Organization | null>(null);
  const [moving, setMoving] = useState<{ move: StatusMove; org: Organization } | null>(null);
  const [reason, setReason] = useState("");
  const [deleting, setDeleting] = useState<Organization | null>(null);

  const setSearch = (patch: { search?: string; status?: Organization["status"]; offset?: number }) =>
    navigate({ search: (prev) => ({ ...prev, ...patch, offset: "offset" in patch ? patch.offset : undefined }), replace: true });
  useEffect(() => {
    if ((search.search ?? "") !== typed) void setSearch({ search: typed || undefined });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [typed]);

  const offset = search.offset ?? 0;
  const orgs = useQuery({ ...q.organizations.withStats.options({ limit: PAGE, offset, search: search.search, status: search.status }), placeholderData: keepPreviousData });
  const totals = useQuery(q.organizations.stats.options({}));
  const move = useAction({
    mutationFn: async () => {
      const { move, org } = moving!;
      const input = { id: org.id, reason: reason.trim() || undefined };
      if (move === "suspend") await q.organizations.suspend.call(input);
      else if (move === "disable") await q.organizations.disable.call(input);
      else await q.organizations.enable.call(input);
    },
  }, {
    invalidates: ORGANIZATION_KEYS(),
    success: () => `${moving?.org.name ?? ""} ${moving?.move === "enable" ? "restored" : `${moving?.move ?? ""}ed`}`,
  });

  const columns: Column<Organization>[] = [
    { id: "name", header: "Organization", cell: (o) => <div className="who"><strong>{o.name}</strong><span className="faint">{o.slug}</span></div> },
    { id: "status", header: "Status", cell: (o) => <span className={`badge badge--${STATUS_TONE[o.status]}`}>{o.status}</span> },
    { id: "members", header: "Members", cell: (o) => <span className="num">{o.stats?.userCount ?? 0}</span> },
    { id: "devices", header: "Devices", cell: (o) => <span className="num" title={`${o.stats?.activeDevices ?? 0} online`}>{o.stats?.deviceCount ?? 0}</span> },
    { id: "deployments", header: "Deployments", cell: (o) => <span className="num" title={`${o.stats?.runningDeployments ?? 0} running`}>{o.stats?.deploymentCount ?? 0}</span> },
    { id: "activity", header: "Last activity", cell: (o) => <RelativeTime value={o.lastActivityAt} /> },
    {
      id: "actions",
      header: "Actions",
      cell: (o) => (
        <div className="row">
          <Button size="small" icon={<Pencil />} aria-label={`Edit ${o.name}`} onClick={() => setEditing(o)}>Edit</Button>
          {movesFrom(o.status).map((m) => (
            <Button key={m} size="small" icon={MOVE[m].icon} aria-label={`${MOVE[m].label} ${o.name}`} onClick={() => { setReason(""); setMoving({ move: m, org: o }); }}>{MOVE[m].label}</Button>
          ))}
          <Button size="small" icon={<Trash2 />} aria-label={`Delete ${o.name}`} onClick={() => setDeleting(o)}>Delete</Button>
        </div>
      ),
    },
  ];

  const filtered = !!search.search || !!search.status;
  const t = totals.data;
  return (
    <>
      <PageHeader
        title="Organizations"
        description={t ? `${counted(t.total, "organization")} (${t.byStatus.active} active, ${t.byStatus.suspended} suspended, ${t.byStatus.disabled} disabled, ${t.empty} empty) with ${counted(t.userCount, "user")}, ${counted(t.deviceCount, "device")} and ${counted(t.deploymentCount, "deployment")}.` : "Every organization of the platform."}
        actions={<Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>Create organization</Button>}
      />
      <Card flush>
        <div className="toolbar">
          <div className="field platform-search">
            <label htmlFor="org-search">Search</label>
            <input id="org-search" className="input" type="search" maxLength={100} value={text} onChange={(e) => setText(e.target.value)} placeholder="Name or slug" />
          </div>
          <div className="field">
            <label htmlFor="org-status">Status</label>
            <select id="org-status" className="select" value={search.status ?? ""} onChange={(e) => void setSearch({ status: (e.target.value || undefined) as Organization["status"] })}>
              <option value="">Any status</option>
              {ORGANIZATION_STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          </div>
        </div>
        <QueryTable
          query={orgs}
          what="the platform's organizations"
          caption="Organizations"
          columns={columns}
          rowKey={(o) => o.id}
          page={{ offset, limit: PAGE, onOffset: (o) => void setSearch({ offset: o }) }}
          pageLabel="Organization pages"
          filtered={filtered}
          noMatch="No organization matches these filters"
          onClearFilters={() => { setText(""); void navigate({ search: {}, replace: true }); }}
          empty={<Empty title="No organizations" action={<Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>Create organization</Button>} />}
        />
      </Card>
      {/* Mounted only while open: each opening starts from the organization as it is (or empty). */}
      {creating && <OrganizationDialog onClose={() => setCreating(false)} />}
      {editing && <OrganizationDialog key={editing.id} org={editing} onClose={() => setEditing(null)} />}
      <ConfirmDialog
        open={moving !== null}
        onClose={() => setMoving(null)}
        danger={moving?.move !== "enable"}
        title={moving ? `${MOVE[moving.move].label} ${moving.org.name}?` : ""}
        confirmLabel={moving ? `${MOVE[moving.move].label} organization` : ""}
        action={move}
      >
        {moving && (
          <div className="stack">
            <p>{MOVE[moving.move].text}</p>
            <div className="field">
              <label htmlFor="status-reason">Reason <span className="faint">(recorded in its audit log)</span></label>
              <input id="status-reason" className="input" maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} />
            </div>
          </div>
        )}
      </ConfirmDialog>
      {deleting && <DeleteOrganizationDialog org={deleting} onClose={() => setDeleting(null)} />}
    </>
  );
}

function OrganizationDialog({ org, onClose }: { org?: Organization; onClose: () => void }) {
  const [name, setName] = useState(org?.name ?? "");
  const [slug, setSlug] = useState("");
  const [description, setDescription] = useState(org?.description ?? "");
  const [contact, setContact] = useState(org?.primaryContact ?? "");
  const [billingEmail, setBillingEmail] = useState(org?.billingEmail ?? "");
  const save = useAction({
    mutationFn: (): Promise<{ name: string }> => org
      ? q.organizations.update.call({ id: org.id, name: name.trim(), description: description.trim() || null, primaryContact: contact.trim() || null, billingEmail: billingEmail.trim() || null })
      : q.organizations.create.call({ name: name.trim(), slug: slug || undefined, description: description.trim() || undefined }),
  }, {
    invalidates: ORGANIZATION_KEYS(),
    success: (saved) => `Organization ${saved.name} ${org ? "saved" : "created"}`,
    onSuccess: onClose,
  });
  const nameProblem = name && name.trim().length < 2 ? "At least 2 characters" : undefined;
  const slugProblem = slug && !/^[a-z0-9]+(-[a-z0-9]+)*$/.test(slug) ? "Lower-case letters, digits and single hyphens" : undefined;

  const id = org ? "edit-org" : "new-org";
  return (
    <Dialog open onClose={onClose} title={org ? `Edit ${org.name}` : "Create an organization"}>
      <form className="stack" onSubmit={save.submit(() => undefined)}>
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} className="input" required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} aria-invalid={!!nameProblem} />
          {nameProblem && <span className="field__error">{nameProblem}</span>}
        </div>
        {!org && (
          <div className="field">
            <label htmlFor={`${id}-slug`}>Slug <span className="faint">(optional)</span></label>
            <input id={`${id}-slug`} className="input" maxLength={63} value={slug} onChange={(e) => setSlug(e.target.value.trim())} aria-invalid={!!slugProblem} aria-describedby={`${id}-slug-hint`} />
            <span id={`${id}-slug-hint`} className={slugProblem ? "field__error" : "field__hint"}>{slugProblem ?? "Derived from the name when empty; it never changes later."}</span>
          </div>
        )}
        <div className="field">
          <label htmlFor={`${id}-description`}>Description <span className="faint">(optional)</span></label>
          <input id={`${id}-description`} className="input" maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} />
        </div>
        {org && (
          <div className="grid grid--2">
            <div className="field">
              <label htmlFor={`${id}-contact`}>Primary contact</label>
              <input id={`${id}-contact`} className="input" maxLength={200} value={contact} onChange={(e) => setContact(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor={`${id}-billing`}>Billing e-mail</label>
              <input id={`${id}-billing`} className="input" type="email" maxLength={320} value={billingEmail} onChange={(e) => setBillingEmail(e.target.value)} />
            </div>
          </div>
        )}
        <FormFooter action={save} onCancel={onClose} disabled={name.trim().length < 2 || !!slugProblem} submitLabel={org ? "Save organization" : "Create organization"} />
      </form>
    </Dialog>
  );
}

/** Asks the API whether the organization can go, and names what blocks it when it cannot. */
function DeleteOrganizationDialog({ org, onClose }: { org: Organization; onClose: () => void }) {
  const check = useQuery({ ...q.organizations.canDelete.options({ id: org.id }), staleTime: 0, gcTime: 0 });
  // A refusal may mean something new blocks it: the check is asked again.
  const remove = useAction({ mutationFn: () => q.organizations.delete.call({ id: org.id }).catch((err: unknown) => { void check.refetch(); throw err; }) }, {
    invalidates: ORGANIZATION_KEYS(),
    success: `Organization ${org.name} deleted`,
  });
  const blocked = check.data && !check.data.canDelete;
  return (
    <ConfirmDialog open onClose={onClose} title={`Delete ${org.name}?`} confirmLabel="Delete organization" action={remove} confirmable={!!check.data?.canDelete}>
      {check.isError ? <ErrorBox error={check.error} />
        : !check.data ? <Loading label="Checking what the organization still holds" />
        : blocked ? (
          <div className="alert-box alert-box--warning" role="status" aria-label="Deletion blocked">
            <div>
              <p><strong>{org.name} cannot be deleted yet:</strong></p>
              <ul className="blockers">{check.data.reasons.map((r) => <li key={r}>{r}.</li>)}</ul>
            </div>
          </div>
        ) : (
          <p>The organization, its roles, API keys and memberships are deleted. Its users keep their accounts. This cannot be undone.</p>
        )}
    </ConfirmDialog>
  );
}
