// Notification targets: where alert notifications go (webhook, Slack-compatible webhook,
// e-mail). Create and edit (a URL and a secret are never shown again: the fields start empty
// and empty keeps them; a generated webhook secret is shown once), send a test, the delivery
// history with every attempt, enable/disable and delete, for someone with alerts:write.
import { useEffect, useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { AlertTriangle, History, KeyRound, Pencil, Plus, Power, PowerOff, Send, Trash2 } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { AlertsAreaNav } from "../alerts/AreaNav";
import type { Delivery } from "../alerts/types";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { CopyButton } from "../ui/CopyButton";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty, Forbidden } from "../ui/states";
import { ManagedGate, ManagedMark } from "../ui/ManagedMark";
import { SecretsDialog } from "../ui/SecretsDialog";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useAction, type Action } from "../ui/useAction";
import { useFormFields } from "../ui/useFormFields";
import { useLocalPage } from "../ui/useLocalPage";
import { createBody, EMPTY_TARGET, formOfTarget, targetProblems, TYPE_LABEL, updateBody, type Target, type TargetForm, type TargetType } from "./target-form";
import "../alerts/alerts.css";

const PAGE = 25;

export function TargetsPage() {
  const canRead = useCan("alerts:read");
  return (
    <>
      <PageHeader title="Notification targets" description="Where alert notifications go: webhooks (signed with HMAC-SHA256), Slack-compatible webhooks and e-mail." />
      <AlertsAreaNav />
      {canRead ? <TargetList /> : <Card><Forbidden what="the notification targets" /></Card>}
    </>
  );
}

function TargetList() {
  const canWrite = useCan("alerts:write");
  const page = useLocalPage(PAGE);
  const [editing, setEditing] = useState<Target | "new" | null>(null);
  const [deleting, setDeleting] = useState<Target | null>(null);
  const [history, setHistory] = useState<Target | null>(null);
  const [settingSecrets, setSettingSecrets] = useState<Target | null>(null);
  const [created, setCreated] = useState<{ name: string; secret: string } | null>(null);
  const list = useQuery({ ...q.notificationTargets.list.options(page.input), placeholderData: keepPreviousData });
  const invalidates = [q.notificationTargets.key()];
  const sendTest = useAction({ mutationFn: (t: Target) => q.notificationTargets.test.call({ id: t.id }) }, {
    invalidates: [q.notificationTargets.deliveries.key()],
    success: (_, t) => `Test notification queued for ${t.name}: follow it in its deliveries`,
    failure: (t) => `Could not send a test to ${t.name}`,
  });
  const toggle = useAction({ mutationFn: (t: Target) => q.notificationTargets.update.call({ id: t.id, enabled: !t.enabled }) }, {
    invalidates,
    success: (_, t) => `${t.name} ${t.enabled ? "disabled" : "enabled"}`,
    failure: (t) => `Could not ${t.enabled ? "disable" : "enable"} ${t.name}`,
  });
  const save = useAction({
    mutationFn: async (form: TargetForm) => {
      if (editing === "new" || editing === null) return await q.notificationTargets.create.call(createBody(form));
      await q.notificationTargets.update.call(updateBody(editing.id, form));
      return null;
    },
  }, {
    invalidates,
    success: (added, form) => added ? `Notification target “${added.name}” added` : `Notification target “${form.name.trim()}” saved`,
    onSuccess: (added) => {
      if (added?.secret) setCreated({ name: added.name, secret: added.secret });
      setEditing(null);
    },
  });
  const remove = useAction({ mutationFn: () => q.notificationTargets.delete.call({ id: deleting!.id }) }, {
    invalidates: [...invalidates, q.alertRules.key()],
    success: () => `Notification target “${deleting?.name ?? ""}” deleted`,
  });

  const columns: Column<Target>[] = [
    { id: "name", header: "Name", cell: (t) => <span className="row row--nowrap"><strong>{t.name}</strong><ManagedMark resource={t} /></span> },
    { id: "type", header: "Type", cell: (t) => TYPE_LABEL[t.type] },
    {
      id: "where",
      header: "Destination",
      cell: (t) => (
        <div className="alert-stacked">
          {t.type === "email" ? <span>{t.recipients.join(", ")}</span> : <span className="mono">{t.url}</span>}
          {t.type === "webhook" && <span className="faint">{t.hasSecret ? "signed (secret stored)" : "unsigned"}</span>}
        </div>
      ),
    },
    { id: "state", header: "State", cell: (t) => <span className={`badge badge--${t.enabled ? "success" : "offline"}`}>{t.enabled ? "enabled" : "disabled"}</span> },
    { id: "created", header: "Created", className: "nowrap", cell: (t) => <RelativeTime value={t.createdAt} /> },
    {
      id: "actions",
      header: "Actions",
      cell: (t) => (
        <div className="alert-actions">
          <Button size="small" icon={<History />} onClick={() => setHistory(t)} aria-label={`Deliveries of ${t.name}`}>Deliveries</Button>
          {canWrite && (
            <>
              <Button
                size="small"
                icon={<Send />}
                busy={sendTest.pendingInput?.id === t.id}
                disabled={!t.enabled}
                title={t.enabled ? undefined : "Enable the target to send a test"}
                onClick={() => void sendTest.run(t)}
              >
                Send test<span className="visually-hidden"> to {t.name}</span>
              </Button>
              <ManagedGate resource={t} open={t.type !== "email" && (
                <Button size="small" icon={<KeyRound />} onClick={() => setSettingSecrets(t)}>Set URL<span className="visually-hidden"> of {t.name}</span></Button>
              )}>
                <Button size="small" icon={<Pencil />} onClick={() => setEditing(t)} aria-label={`Edit ${t.name}`} />
                <Button
                  size="small"
                  icon={t.enabled ? <PowerOff /> : <Power />}
                  busy={toggle.pendingInput?.id === t.id}
                  aria-label={`${t.enabled ? "Disable" : "Enable"} ${t.name}`}
                  onClick={() => void toggle.run(t)}
                />
                <Button size="small" variant="danger" icon={<Trash2 />} onClick={() => setDeleting(t)} aria-label={`Delete ${t.name}`} />
              </ManagedGate>
            </>
          )}
        </div>
      ),
    },
  ];

  return (
    <div className="stack">
      {created && (
        <section className="card" aria-labelledby="new-secret-title">
          <div className="card__header">
            <h2 id="new-secret-title">Signing secret of “{created.name}”</h2>
            <Button size="small" variant="ghost" onClick={() => setCreated(null)}>Done</Button>
          </div>
          <div className="card__body stack">
            <div className="alert-box alert-box--warning" role="note">
              <AlertTriangle aria-hidden="true" />
              <p>Copy the secret now: it is shown only this once. The receiver checks each request's X-Signature (sha256=HMAC-SHA256 of the body) with it.</p>
            </div>
            <div className="secret-box">
              <code data-testid="new-secret">{created.secret}</code>
              <CopyButton value={created.secret} label="Copy secret" />
            </div>
          </div>
        </section>
      )}
      <Card flush title="Targets" actions={canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setEditing("new")}>Add notification target</Button>}>
        <QueryTable
          query={list}
          what="the notification targets"
          caption="Notification targets"
          columns={columns}
          rowKey={(t) => t.id}
          page={page}
          pageLabel="Notification target pages"
          empty={<Empty title="No notification targets yet">Add a webhook or an e-mail target, then pick it in an alert rule.</Empty>}
        />
      </Card>
      <TargetDialog
        open={editing !== null}
        target={editing === "new" ? null : editing}
        onClose={() => setEditing(null)}
        action={save}
      />
      <ConfirmDialog
        open={deleting !== null}
        onClose={() => setDeleting(null)}
        title={`Delete the target “${deleting?.name ?? ""}”?`}
        confirmLabel="Delete target"
        action={remove}
      >
        <p>Rules stop notifying it; its past deliveries stay in the rules' history under its name.</p>
      </ConfirmDialog>
      {settingSecrets && (
        <SecretsDialog
          title={`URL${settingSecrets.type === "webhook" ? " and secret" : ""} of “${settingSecrets.name}”`}
          fields={[
            { key: "url", label: "URL", hint: settingSecrets.url ? `Stored: ${settingSecrets.url}` : "None stored yet: the target waits for it." },
            ...(settingSecrets.type === "webhook" ? [{ key: "secret", label: "Signing secret", password: true, hint: "At least 16 characters; the receiver checks X-Signature with it." }] : []),
          ]}
          save={(values) => q.notificationTargets.update.call({ id: settingSecrets.id, ...values })}
          invalidates={invalidates}
          success={`Notification target “${settingSecrets.name}” saved`}
          onClose={() => setSettingSecrets(null)}
        />
      )}
      <Dialog open={history !== null} onClose={() => setHistory(null)} title={`Deliveries of “${history?.name ?? ""}”`} footer={<Button onClick={() => setHistory(null)}>Close</Button>}>
        {history && <DeliveryHistory targetId={history.id} />}
      </Dialog>
    </div>
  );
}

const STATUS_TONE: Record<Delivery["status"], string> = { pending: "badge--pending", delivering: "badge--accent", delivered: "badge--success", failed: "badge--danger" };

/** A target's deliveries, newest first, each with its attempts (status code, duration, error). */
function DeliveryHistory({ targetId }: { targetId: string }) {
  const page = useLocalPage(10);
  const deliveries = useQuery({
    ...q.notificationTargets.deliveries.options({ id: targetId, ...page.input }),
    placeholderData: keepPreviousData,
    // A delivery still in flight moves on its own (the job runner's retries): follow it while the dialog is open.
    refetchInterval: (query) => (query.state.data?.items.some((d) => d.status === "pending" || d.status === "delivering") ? 2_000 : false),
  });
  const columns: Column<Delivery>[] = [
    { id: "when", header: "Created", className: "nowrap", cell: (d) => <RelativeTime value={d.createdAt} /> },
    { id: "event", header: "Event", cell: (d) => d.event },
    { id: "status", header: "Status", cell: (d) => <span className={`badge ${STATUS_TONE[d.status]}`}>{d.status}</span> },
    {
      id: "attempts",
      header: "Attempts",
      cell: (d) => (
        <div>
          <span>{d.attempts} of {d.maxAttempts}{d.lastError ? ` · ${d.lastError}` : ""}</span>
          {d.attemptLog.length > 0 && (
            <ol className="delivery-attempts" aria-label={`Attempts of the ${d.event} delivery`}>
              {d.attemptLog.map((a) => (
                <li key={a.attempt}>
                  {formatDateTime(a.startedAt)}: {a.success ? "delivered" : "failed"}{a.statusCode != null ? ` (HTTP ${a.statusCode})` : ""} in {a.durationMs} ms{a.error ? ` · ${a.error}` : ""}
                </li>
              ))}
            </ol>
          )}
        </div>
      ),
    },
  ];
  return <QueryTable query={deliveries} what="the deliveries" caption="Deliveries" columns={columns} rowKey={(d) => d.id} page={page} pageLabel="Delivery pages" empty={<Empty title="Nothing sent to this target yet" />} />;
}

function TargetDialog({ open, target, onClose, action }: { open: boolean; target: Target | null; onClose: () => void; action: Action<TargetForm> }) {
  const editing = target !== null;
  const { form, set, reset, valid, id, problem, described } = useFormFields<TargetForm>(EMPTY_TARGET, "target", (f) => targetProblems(f, editing));
  useEffect(() => {
    if (open) {
      reset(target ? formOfTarget(target) : EMPTY_TARGET);
      action.reset();
    }
  }, [open]); // eslint-disable-line react-hooks/exhaustive-deps

  return (
    <Dialog open={open} onClose={onClose} title={editing ? `Edit notification target “${target.name}”` : "Add a notification target"}>
      <form className="stack" onSubmit={action.submit(() => form, { valid })} noValidate>
        <div className="field">
          <label htmlFor={id("name")}>Name</label>
          <input id={id("name")} className="input" value={form.name} maxLength={120} onChange={(e) => set("name", e.target.value)} {...described("name")} />
          {problem("name")}
        </div>
        <div className="field">
          <label htmlFor={id("type")}>Type</label>
          <select id={id("type")} className="select" value={form.type} disabled={editing} onChange={(e) => set("type", e.target.value as TargetType)}>
            {(Object.keys(TYPE_LABEL) as TargetType[]).map((t) => <option key={t} value={t}>{TYPE_LABEL[t]}</option>)}
          </select>
          {editing && <span className="field__hint">The type of a target cannot change.</span>}
        </div>
        {form.type !== "email" && (
          <div className="field">
            <label htmlFor={id("url")}>URL</label>
            <input id={id("url")} className="input mono" type="url" value={form.url} placeholder={editing ? target.url ?? "" : "https://hooks.example.com/alerts"} onChange={(e) => set("url", e.target.value)} {...described("url")} />
            <span className="field__hint">{editing ? "Stored encrypted and shown masked; leave empty to keep it." : "Stored encrypted; reads show it masked."}</span>
            {problem("url")}
          </div>
        )}
        {form.type === "webhook" && (
          <div className="field">
            <label htmlFor={id("secret")}>Signing secret <span className="faint">(optional)</span></label>
            <input id={id("secret")} className="input" type="password" autoComplete="new-password" value={form.secret} onChange={(e) => set("secret", e.target.value)} {...described("secret")} />
            <span className="field__hint">
              {editing ? "Never shown again; leave empty to keep the stored one, or type a new one to rotate it." : "16 to 256 characters; left empty, one is generated and shown once."}
            </span>
            {problem("secret")}
          </div>
        )}
        {form.type === "email" && (
          <div className="field">
            <label htmlFor={id("recipients")}>Recipients</label>
            <textarea id={id("recipients")} className="input" rows={3} value={form.recipients} placeholder="oncall@example.com" onChange={(e) => set("recipients", e.target.value)} {...described("recipients")} />
            <span className="field__hint">One address per line (up to 20). E-mail needs the service's SMTP server (SMTP_URL).</span>
            {problem("recipients")}
          </div>
        )}
        <label className="row"><input type="checkbox" checked={form.enabled} onChange={(e) => set("enabled", e.target.checked)} /> Enabled</label>
        <FormFooter action={action} onCancel={onClose} disabled={!valid} submitLabel={editing ? "Save" : "Add target"} />
      </form>
    </Dialog>
  );
}
