// One registry section, whatever its kind (kinds.tsx): its table (QueryTable), the add/edit
// dialog, enable/disable, delete, sync now with the sync's report, and a kind's own row actions
// and detail dialog (OCI: health check, sync history). The kinds differ only in their spec.
import { useState, type ReactNode } from "react";
import { useQuery, keepPreviousData } from "@tanstack/react-query";
import { KeyRound, Pencil, Plus, Power, PowerOff, RefreshCw, Trash2 } from "lucide-react";
import { q } from "../api/query";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { QueryTable } from "../ui/QueryTable";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";
import { ManagedGate } from "../ui/ManagedMark";
import { SecretsDialog } from "../ui/SecretsDialog";
import { formOf, type RegistryForm } from "./forms";
import { RegistryDialog } from "./RegistryDialog";
import type { RegistryKindSpec, RegistryRow } from "./kinds";

const PAGE = 25;

export function RegistrySection<R extends RegistryRow>({ spec, canWrite }: { spec: RegistryKindSpec<R>; canWrite: boolean }) {
  const page = useLocalPage(PAGE);
  const [editing, setEditing] = useState<R | "new" | null>(null);
  const [deleting, setDeleting] = useState<R | null>(null);
  const [synced, setSynced] = useState<{ name: string; report: ReactNode } | null>(null);
  const [detail, setDetail] = useState<R | null>(null);
  const [crediting, setCrediting] = useState<R | null>(null);
  const list = useQuery({ ...spec.list(page.input), placeholderData: keepPreviousData });
  const invalidates = [spec.key];

  const save = useAction<RegistryForm, unknown>({
    mutationFn: (form) => (editing === "new" || editing === null ? spec.create(form) : spec.update(editing, form)),
  }, {
    invalidates,
    success: (_, form) => `${spec.noun} “${form.name.trim()}” ${editing === "new" ? "added" : "saved"}`,
    onSuccess: () => setEditing(null),
  });
  const toggle = useAction({ mutationFn: (r: R) => spec.setEnabled(r, !r.enabled) }, {
    invalidates,
    success: (_, r) => `${r.name} ${r.enabled ? "disabled" : "enabled"}`,
    failure: (r) => `Could not ${r.enabled ? "disable" : "enable"} ${r.name}`,
  });
  const sync = useAction({ mutationFn: (r: R) => spec.sync!(r) }, {
    invalidates: [spec.key, q.applications.key()],
    failure: (r) => `Could not sync ${r.name}`,
    onSuccess: (report, r) => setSynced({ name: r.name, report }),
  });
  const remove = useAction({ mutationFn: () => spec.remove(deleting!) }, {
    invalidates,
    success: () => `Registry “${deleting?.name ?? ""}” deleted`,
  });

  const actions: Column<R> = {
    id: "actions", header: "Actions", cell: (r) => !canWrite ? spec.detail && (
      <Button size="small" icon={spec.detail.icon} onClick={() => setDetail(r)} aria-label={spec.detail.label(r.name)}>{spec.detail.short}</Button>
    ) : (
      <div className="row row--wrap">
        {spec.sync && <Button size="small" icon={<RefreshCw />} busy={sync.pendingInput?.id === r.id} disabled={!r.enabled} onClick={() => void sync.run(r)}>Sync now<span className="visually-hidden">{r.name}</span></Button>}
        {spec.extraActions?.(r)}
        {spec.detail && <Button size="small" icon={spec.detail.icon} onClick={() => setDetail(r)} aria-label={spec.detail.label(r.name)} />}
        <ManagedGate resource={r} open={spec.setCredential && r.authType !== "NONE" && (
          <Button size="small" icon={<KeyRound />} onClick={() => setCrediting(r)}>Set credential<span className="visually-hidden"> of {r.name}</span></Button>
        )}>
          <Button size="small" icon={<Pencil />} onClick={() => setEditing(r)} aria-label={`Edit ${r.name}`} />
          <Button size="small" icon={r.enabled ? <PowerOff /> : <Power />} busy={toggle.pendingInput?.id === r.id} onClick={() => void toggle.run(r)} aria-label={`${r.enabled ? "Disable" : "Enable"} ${r.name}`} />
          <Button size="small" variant="danger" icon={<Trash2 />} onClick={() => setDeleting(r)} aria-label={`Delete ${r.name}`} />
        </ManagedGate>
      </div>
    ),
  };
  const showActions = canWrite || !!spec.detail;

  return (
    <Card title={spec.title} flush actions={canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setEditing("new")}>{spec.addLabel}</Button>}>
      {spec.note}
      <QueryTable
        query={list}
        what={spec.what}
        caption={spec.title}
        columns={showActions ? [...spec.columns, actions] : spec.columns}
        rowKey={(r) => r.id}
        page={page}
        pageLabel={spec.pageLabel}
        empty={spec.empty}
      />
      <RegistryDialog
        kind={spec.kind}
        open={editing !== null}
        initial={editing && editing !== "new" ? formOf(editing) : null}
        hasCredentials={editing !== null && editing !== "new" && editing.hasCredentials}
        onClose={() => setEditing(null)}
        action={save}
      />
      <ConfirmDialog open={deleting !== null} onClose={() => setDeleting(null)} title={`Delete “${deleting?.name ?? ""}”?`} confirmLabel="Delete registry" action={remove}>
        <p>{spec.deleteText}</p>
      </ConfirmDialog>
      <Dialog open={synced !== null} onClose={() => setSynced(null)} title={`Sync of “${synced?.name ?? ""}”`} footer={<Button onClick={() => setSynced(null)}>Close</Button>}>
        {synced?.report}
      </Dialog>
      {crediting && spec.setCredential && (
        <SecretsDialog
          title={`Credential of “${crediting.name}”`}
          fields={[{ key: "credential", label: crediting.authType === "BASIC" ? "Credential (username:password)" : "Token", password: true, hint: "Stored encrypted and never shown again." }]}
          save={(values) => spec.setCredential!(crediting, values.credential!)}
          invalidates={invalidates}
          success={`${spec.noun} “${crediting.name}” saved`}
          onClose={() => setCrediting(null)}
        />
      )}
      {spec.detail && (
        <Dialog open={detail !== null} onClose={() => setDetail(null)} title={spec.detail.title(detail?.name ?? "")} footer={<Button onClick={() => setDetail(null)}>Close</Button>}>
          {detail && spec.detail.body(detail)}
        </Dialog>
      )}
    </Card>
  );
}
