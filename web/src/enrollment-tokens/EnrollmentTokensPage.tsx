// Enrollment tokens: list, create (the secret shown once, with the exact simulator command
// that enrolls test devices with it) and revoke.
import { Fragment, useState } from "react";
import { Link } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { AlertTriangle, Ban, Plus, ShieldPlus } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { CopyButton } from "../ui/CopyButton";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";
import { LabelChips } from "../devices/LabelChips";
import { LabelsEditor, type LabelRow, labelsOfRows } from "../devices/LabelsEditor";
import { TrustedEkCasCard } from "../tpm-ek-cas/TrustedEkCasCard";
import "./enrollment.css";

type Token = RouterOutputs["enrollmentTokens"]["list"]["items"][number];
type CreatedToken = RouterOutputs["enrollmentTokens"]["create"];

/** How a token admits the devices it enrolls (docs/admission.md), in words. */
export const MODE_WORDS: Record<Token["mode"], string> = {
  auto: "admits at once",
  approval: "lobby: awaits approval",
  preauthorized: "pre-authorized devices only",
};

const STATUS_TONE: Record<Token["status"], string> = { active: "success", expired: "warning", exhausted: "warning", revoked: "danger" };

/** The command that enrolls simulated devices against this very service with the token. */
export function simulatorCommand(token: string, devices = 10): string {
  return `npm run simulate -- --url ${location.origin} --token ${token} --devices ${devices} --heartbeat 10s --telemetry 15s`;
}

/**
 * A command as words that wrap only between them: each option stays on one line with its
 * value (`--telemetry 15s`, never `--` at the end of a line). The text is the command itself.
 */
function commandWords(command: string) {
  const words: string[] = [];
  for (const word of command.split(" ")) {
    const previous = words.at(-1);
    if (previous?.startsWith("--") && previous !== "--" && !previous.includes(" ") && !word.startsWith("--")) words[words.length - 1] = `${previous} ${word}`;
    else words.push(word);
  }
  // The spaces between the words (not inside them) are where lines may break.
  return words.map((w, i) => <Fragment key={i}>{i > 0 && " "}<span className="command__word">{w}</span></Fragment>);
}

export function EnrollmentTokensPage() {
  const canWrite = useCan("enrollment:write");
  const page = useLocalPage(50);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<CreatedToken | null>(null);
  const [revoking, setRevoking] = useState<Token | null>(null);
  const tokens = useQuery({ ...q.enrollmentTokens.list.options(page.input), placeholderData: keepPreviousData });
  const revoke = useAction({ mutationFn: () => q.enrollmentTokens.revoke.call({ id: revoking!.id }) }, {
    invalidates: [q.enrollmentTokens.key()],
    success: () => `Token “${revoking?.name ?? ""}” revoked`,
  });

  const columns: Column<Token>[] = [
    { id: "name", header: "Name", cell: (t) => <div className="stacked-cell"><strong>{t.name}</strong>{t.description && <span className="faint">{t.description}</span>}</div> },
    { id: "prefix", header: "Token", cell: (t) => <code>{t.tokenPrefix}…</code> },
    { id: "status", header: "Status", cell: (t) => <span className={`badge badge--${STATUS_TONE[t.status]}`}>{t.status}</span> },
    { id: "mode", header: "Admission", cell: (t) => MODE_WORDS[t.mode] },
    { id: "labels", header: "Labels applied", cell: (t) => <LabelChips labels={t.labels} max={3} /> },
    { id: "uses", header: "Uses", cell: (t) => <span className="num">{t.useCount}{t.maxUses !== null ? ` / ${t.maxUses}` : ""}</span> },
    { id: "expires", header: "Expires", cell: (t) => <RelativeTime value={t.expiresAt} never="never" /> },
    { id: "lastUsed", header: "Last used", cell: (t) => <RelativeTime value={t.lastUsedAt} /> },
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (t: Token) => t.status === "active" || t.status === "exhausted" || t.status === "expired"
        ? <Button size="small" icon={<Ban />} onClick={() => setRevoking(t)} aria-label={`Revoke ${t.name}`}>Revoke</Button>
        : null,
    }] : []),
  ];

  return (
    <>
      <PageHeader
        title="Enrollment"
        description="Devices enroll with a token of this organization: they get a certificate from its default CA and the token's labels."
        actions={canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>Create token</Button>}
      />
      <SigningCaNotice />
      {created && <NewTokenCard token={created} onDismiss={() => setCreated(null)} />}
      <div className="stack">
        <Card title="Tokens" flush>
          <QueryTable
            query={tokens}
            what="enrollment tokens"
            caption="Enrollment tokens"
            columns={columns}
            rowKey={(t) => t.id}
            page={page}
            pageLabel="Token pages"
            empty={
              <Empty title="No enrollment tokens yet" action={canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>Create token</Button>}>
                A token lets devices join this organization. Create one, then run the simulator command it shows to see devices appear on the overview.
              </Empty>
            }
          />
        </Card>
        <TrustedEkCasCard />
      </div>
      {/* Mounted only while open: each opening starts from an empty form. */}
      {creating && <CreateTokenDialog onClose={() => setCreating(false)} onCreated={(token) => { setCreated(token); setCreating(false); }} />}
      <ConfirmDialog
        open={revoking !== null}
        onClose={() => setRevoking(null)}
        title={`Revoke “${revoking?.name ?? ""}”?`}
        confirmLabel="Revoke token"
        action={revoke}
      >
        <p>Devices can no longer enroll with this token. Devices that already enrolled with it keep working.</p>
      </ConfirmDialog>
    </>
  );
}

/**
 * Devices get their certificate from the organization's default CA when they enroll: without
 * a usable one, every enrollment is refused (409). Say so before anyone hands out a token, and
 * let whoever may create CAs make one here.
 */
function SigningCaNotice() {
  const session = useSession();
  const canRead = useCan("certificates:read");
  const canCreate = useCan("certificates:write");
  const createCa = useAction({
    mutationFn: (name: string) => q.caCertificates.generate.call({ name, commonName: name }),
  }, {
    invalidates: [q.caCertificates.key()],
    success: (_ca, name) => `Certificate authority “${name}” created: devices can enroll`,
    failure: "Could not create the certificate authority",
  });
  // Without certificates:read the list would be a 403: not asked, and nothing to tell.
  const cas = useQuery({ ...q.caCertificates.list.options({ limit: 200, offset: 0 }), enabled: canRead });
  if (!cas.data) return null;
  const now = Date.now();
  const signing = cas.data.items.some((ca) => ca.isDefault && !ca.retiredAt && ca.hasPrivateKey && Date.parse(ca.notBefore) <= now && Date.parse(ca.notAfter) > now);
  if (signing) return null;

  return (
    <div className="alert-box alert-box--warning signing-ca-notice" role="status">
      <AlertTriangle aria-hidden="true" />
      <div className="stack stack--tight">
        <p>
          <strong>Devices cannot enroll yet.</strong> This organization has no certificate authority in service to sign their certificates,
          so every enrollment would be refused.{canCreate ? "" : " An administrator can create one."}
        </p>
        {canCreate && (
          <div>
            <Button size="small" variant="primary" icon={<ShieldPlus />} busy={createCa.isPending} onClick={() => void createCa.run(`${session.organization.name} Root CA`.slice(0, 64))}>Create a certificate authority</Button>
          </div>
        )}
      </div>
    </div>
  );
}

function NewTokenCard({ token, onDismiss }: { token: CreatedToken; onDismiss: () => void }) {
  const command = simulatorCommand(token.token);
  return (
    <section className="card new-token" aria-labelledby="new-token-title">
      <div className="card__header">
        <h2 id="new-token-title">Token “{token.name}” created</h2>
        <Button size="small" variant="ghost" onClick={onDismiss}>Done</Button>
      </div>
      <div className="card__body stack">
        <div className="alert-box alert-box--warning" role="note">
          <AlertTriangle aria-hidden="true" />
          <p>Copy the token now: it is shown only this once and cannot be retrieved later. Anyone holding it can enroll devices into this organization{token.maxUses ? ` (up to ${token.maxUses})` : ""}.</p>
        </div>
        <div className="field">
          <span className="field__label">Enrollment token</span>
          <div className="secret-box">
            <code data-testid="new-token">{token.token}</code>
            <CopyButton value={token.token} label="Copy token" />
          </div>
        </div>
        <div className="field">
          <span className="field__label">Enroll 10 simulated devices with it (from the project's folder)</span>
          <pre className="command">{commandWords(command)}</pre>
          <div><CopyButton value={command} label="Copy command" /></div>
          <span className="field__hint">They appear on the <Link to="/">overview</Link> and in <Link to="/devices">Devices</Link> within a minute, heartbeating every 10 s.</span>
        </div>
      </div>
    </section>
  );
}

function CreateTokenDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (token: CreatedToken) => void }) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [labels, setLabels] = useState<LabelRow[]>([]);
  const [expiresInDays, setExpiresInDays] = useState("");
  const [maxUses, setMaxUses] = useState("");
  const [mode, setMode] = useState<Token["mode"]>("auto");
  const create = useAction(q.enrollmentTokens.create.mutation(), { invalidates: [q.enrollmentTokens.key()], onSuccess: onCreated });
  const labelSet = labelsOfRows(labels);
  const body = () => ({
    name: name.trim(),
    description: description.trim() || undefined,
    labels: labelSet.ok ? labelSet.labels : {},
    mode,
    expiresAt: expiresInDays ? new Date(Date.now() + Number(expiresInDays) * 86_400_000).toISOString() : undefined,
    maxUses: maxUses ? Number(maxUses) : undefined,
  });

  return (
    <Dialog open onClose={onClose} title="Create an enrollment token">
      <form className="stack" onSubmit={create.submit(body, { valid: labelSet.ok })}>
        <div className="field">
          <label htmlFor="token-name">Name</label>
          <input id="token-name" className="input" required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="Berlin plant, line 3" />
        </div>
        <div className="field">
          <label htmlFor="token-description">Description <span className="faint">(optional)</span></label>
          <input id="token-description" className="input" maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="token-mode">Admission</label>
          <select id="token-mode" className="input" value={mode} onChange={(e) => setMode(e.target.value as Token["mode"])} aria-describedby="token-mode-hint">
            <option value="auto">Admit at once</option>
            <option value="approval">Lobby: each new device awaits approval</option>
            <option value="preauthorized">Pre-authorized devices only</option>
          </select>
          <span id="token-mode-hint" className="field__hint">
            {mode === "auto" ? "Anyone holding the token can enroll a device that gets its deployments at once."
              : mode === "approval" ? "Devices wait in the Lobby, visible but given nothing, until someone approves them."
              : "Only devices on the organization's pre-authorized list (the factory's list) are admitted; any other is refused."}
          </span>
        </div>
        <LabelsEditor rows={labels} onChange={setLabels} legend="Labels applied to every device it enrolls" />
        <div className="grid grid--2">
          <div className="field">
            <label htmlFor="token-expiry">Expires in (days)</label>
            <input id="token-expiry" className="input" type="number" min={1} max={3650} value={expiresInDays} onChange={(e) => setExpiresInDays(e.target.value)} placeholder="never" />
          </div>
          <div className="field">
            <label htmlFor="token-uses">Maximum uses</label>
            <input id="token-uses" className="input" type="number" min={1} max={10_000_000} value={maxUses} onChange={(e) => setMaxUses(e.target.value)} placeholder="unlimited" />
          </div>
        </div>
        <FormFooter action={create} onCancel={onClose} disabled={!name.trim() || !labelSet.ok} submitLabel="Create token" />
      </form>
    </Dialog>
  );
}
