// API keys of the organization: prefix, permissions, creator, last use and expiry; create
// with the permission picker (offering only what the creator holds, as the API demands), the
// key shown once with a copy button and a warning; rotate or revoke after a confirmation.
// Rotation is one call (apiKeys.rotate, one transaction): a new key like the old one (name,
// description, permissions, expiry), and the old one revoked at once or left working for a
// handover period the person chooses, so that what uses it can be given the new key first.
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { AlertTriangle, Ban, Plus, RefreshCw } from "lucide-react";
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
import { Empty, Forbidden } from "../ui/states";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";
import { PermissionChips } from "../roles/PermissionChips";
import { PermissionPicker } from "../roles/PermissionPicker";

type ApiKey = RouterOutputs["apiKeys"]["list"]["items"][number];
type CreatedKey = RouterOutputs["apiKeys"]["create"];
type ReplacedKey = RouterOutputs["apiKeys"]["rotate"]["replaced"];

/** How long the old key keeps working after a rotation (graceSeconds). */
const HANDOVER_CHOICES = [
  { seconds: 0, label: "Stops at once" },
  { seconds: 3_600, label: "Keeps working for 1 hour" },
  { seconds: 86_400, label: "Keeps working for 24 hours" },
  { seconds: 7 * 86_400, label: "Keeps working for 7 days" },
];

const PAGE = 50;

const isExpired = (k: ApiKey) => k.expiresAt !== undefined && Date.parse(k.expiresAt) <= Date.now();

export function ApiKeysPage() {
  const session = useSession();
  const canRead = useCan("api-keys:read");
  const canWrite = useCan("api-keys:write");
  const orgId = session.organization.id;
  const page = useLocalPage(PAGE);
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ key: CreatedKey; replaced?: ReplacedKey } | null>(null);
  const [rotating, setRotating] = useState<ApiKey | null>(null);
  const [handoverSeconds, setHandoverSeconds] = useState(0);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const keys = useQuery({ ...q.apiKeys.list.options({ orgId, ...page.input }), enabled: canRead, placeholderData: keepPreviousData });
  const rotate = useAction({ mutationFn: () => q.apiKeys.rotate.call({ orgId, id: rotating!.id, graceSeconds: handoverSeconds }) }, {
    invalidates: [q.apiKeys.key()],
    success: () => `Key “${rotating?.name ?? ""}” rotated`,
    onSuccess: ({ replaced, ...key }) => setCreated({ key, replaced }),
  });
  const revoke = useAction({ mutationFn: () => q.apiKeys.revoke.call({ orgId, id: revoking!.id }) }, {
    invalidates: [q.apiKeys.key()],
    success: () => `Key “${revoking?.name ?? ""}” revoked`,
  });

  const columns: Column<ApiKey>[] = [
    { id: "name", header: "Name", cell: (k) => <div className="stacked-cell"><strong>{k.name}</strong>{k.description && <span className="faint">{k.description}</span>}</div> },
    {
      id: "prefix",
      header: "Key",
      // A rotated key is marked until its handover ends (then it is expired or gone); its
      // successor names it, so the old key's use stays readable after it ends.
      cell: (k) => (
        <div className="stacked-cell">
          <span className="row row--nowrap"><code>{k.keyPrefix}…</code>{k.replacedById && !isExpired(k) && <span className="badge badge--warning">replaced</span>}</span>
          {k.replaces && <span className="faint">replaces <code>{k.replaces.keyPrefix}…</code></span>}
        </div>
      ),
    },
    { id: "permissions", header: "Permissions", cell: (k) => <PermissionChips permissions={k.permissions} max={3} /> },
    {
      id: "creator",
      header: "Created by",
      cell: (k) => k.creator
        ? <div className="stacked-cell"><span>{k.creator.name}{k.creator.id === session.userId && <span className="faint"> (you)</span>}</span><span className="faint"><RelativeTime value={k.createdAt} /></span></div>
        : <span className="faint">unknown</span>,
    },
    {
      id: "lastUsed",
      header: "Last used",
      cell: (k) => (
        <div className="stacked-cell">
          <RelativeTime value={k.lastUsedAt} />
          {k.replaces && <span className="faint">old key <code>{k.replaces.keyPrefix}…</code>: <RelativeTime value={k.replaces.lastUsedAt} /></span>}
        </div>
      ),
    },
    {
      id: "expires",
      header: "Expires",
      cell: (k) => isExpired(k) ? <span className="badge badge--warning">expired</span> : <RelativeTime value={k.expiresAt} never="never" />,
    },
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (k: ApiKey) => (
        <div className="row row--nowrap">
          {!isExpired(k) && !k.replacedById && <Button size="small" icon={<RefreshCw />} onClick={() => { setHandoverSeconds(0); setRotating(k); }} aria-label={`Rotate ${k.name}`}>Rotate</Button>}
          <Button size="small" icon={<Ban />} onClick={() => setRevoking(k)} aria-label={`Revoke ${k.name}`}>Revoke</Button>
        </div>
      ),
    }] : []),
  ];

  const createButton = canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>Create API key</Button>;
  if (!canRead) return <><PageHeader title="API keys" /><Forbidden what="the API keys" /></>;

  return (
    <>
      <PageHeader
        title="API keys"
        description="Keys let scripts and pipelines call the API of this organization (header X-API-Key). A key never does more than its permissions, nor more than its creator may do now."
        actions={createButton}
      />
      {created && <NewKeyCard created={created.key} replaced={created.replaced} onDismiss={() => setCreated(null)} />}
      <Card title="Keys" flush>
        <QueryTable
          query={keys}
          what="the API keys"
          caption="API keys"
          columns={columns}
          rowKey={(k) => k.id}
          page={page}
          pageLabel="API key pages"
          empty={<Empty title="No API keys yet" action={createButton}>Create a key for a script or a pipeline, with only the permissions it needs.</Empty>}
        />
      </Card>
      {creating && (
        <CreateKeyDialog
          orgId={orgId}
          onClose={() => setCreating(false)}
          onCreated={(key) => { setCreated({ key }); setCreating(false); }}
        />
      )}
      <ConfirmDialog
        open={rotating !== null}
        onClose={() => setRotating(null)}
        title={`Rotate “${rotating?.name ?? ""}”?`}
        confirmLabel="Rotate key"
        action={rotate}
      >
        <p>A new key with the same name, permissions and expiry replaces the key starting <code>{rotating?.keyPrefix}</code>. Whatever uses the old key gets 401 once it stops working.</p>
        <div className="field">
          <label htmlFor="rotate-handover">The old key</label>
          <select id="rotate-handover" className="select" value={handoverSeconds} onChange={(e) => setHandoverSeconds(Number(e.target.value))}>
            {HANDOVER_CHOICES.map((c) => <option key={c.seconds} value={c.seconds}>{c.label}</option>)}
          </select>
        </div>
      </ConfirmDialog>
      <ConfirmDialog
        open={revoking !== null}
        onClose={() => setRevoking(null)}
        title={`Revoke “${revoking?.name ?? ""}”?`}
        confirmLabel="Revoke key"
        action={revoke}
      >
        <p>The key starting <code>{revoking?.keyPrefix}</code> stops working at once (401 on its next request). This cannot be undone.</p>
      </ConfirmDialog>
    </>
  );
}

function NewKeyCard({ created, replaced, onDismiss }: { created: CreatedKey; replaced?: ReplacedKey; onDismiss: () => void }) {
  const example = `curl -H "X-API-Key: ${created.key}" ${location.origin}/api/v1/devices`;
  return (
    <section className="card new-secret" aria-labelledby="new-key-title">
      <div className="card__header">
        <h2 id="new-key-title">Key “{created.name}” {replaced ? "rotated" : "created"}</h2>
        <Button size="small" variant="ghost" onClick={onDismiss}>Done</Button>
      </div>
      <div className="card__body stack">
        <div className="alert-box alert-box--warning" role="note">
          <AlertTriangle aria-hidden="true" />
          <p>
            Copy the key now: it is shown only this once and cannot be retrieved later. Anyone holding it can act with its permissions.
            {replaced && (replaced.revokedAt
              ? <> The key starting <code>{replaced.keyPrefix}</code> no longer works.</>
              : <> The key starting <code>{replaced.keyPrefix}</code> keeps working until <time dateTime={replaced.expiresAt}>{formatDateTime(replaced.expiresAt!)}</time>: give the new key to what uses it before then.</>)}
          </p>
        </div>
        <div className="field">
          <span className="field__label">API key</span>
          <div className="secret-box">
            <code data-testid="new-api-key">{created.key}</code>
            <CopyButton value={created.key} label="Copy key" />
          </div>
        </div>
        <div className="field">
          <span className="field__label">Try it</span>
          <pre className="command">{example}</pre>
        </div>
      </div>
    </section>
  );
}

function CreateKeyDialog({ orgId, onClose, onCreated }: { orgId: string; onClose: () => void; onCreated: (key: CreatedKey) => void }) {
  const session = useSession();
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [expiresInDays, setExpiresInDays] = useState("");
  const [permissions, setPermissions] = useState<Set<string>>(new Set());
  const create = useAction(q.apiKeys.create.mutation(), { invalidates: [q.apiKeys.key()], onSuccess: onCreated });
  const held = new Set(session.permissions);
  const body = () => ({
    orgId,
    name: name.trim(),
    description: description.trim() || undefined,
    permissions: [...permissions],
    expiresAt: expiresInDays ? new Date(Date.now() + Number(expiresInDays) * 86_400_000).toISOString() : undefined,
  });

  return (
    <Dialog open wide onClose={onClose} title="Create an API key">
      <form className="stack" onSubmit={create.submit(body)}>
        <div className="grid grid--2">
          <div className="field">
            <label htmlFor="key-name">Name</label>
            <input id="key-name" className="input" required minLength={2} maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="CI pipeline" />
          </div>
          <div className="field">
            <label htmlFor="key-expiry">Expires in (days)</label>
            <input id="key-expiry" className="input" type="number" min={1} max={3650} value={expiresInDays} onChange={(e) => setExpiresInDays(e.target.value)} placeholder="never" />
          </div>
        </div>
        <div className="field">
          <label htmlFor="key-description">Description <span className="faint">(optional)</span></label>
          <input id="key-description" className="input" maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} />
        </div>
        <PermissionPicker idPrefix="key-permission" legend="Permissions (only those you hold)" value={permissions} onChange={setPermissions} offered={(key) => held.has(key)} />
        <FormFooter action={create} onCancel={onClose} disabled={name.trim().length < 2} submitLabel="Create key" />
      </form>
    </Dialog>
  );
}
