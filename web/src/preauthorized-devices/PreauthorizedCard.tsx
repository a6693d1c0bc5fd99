// The pre-authorized devices (/preauthorized-devices, docs/admission.md), on the Lobby page: the
// factory's list of device ids (with the key or TPM endorsement key each must enroll with, and
// the labels it gets), imported from a CSV or JSON file or pasted; a device enrolling with a
// listed id is admitted with those labels, one claiming it with another key waits in the lobby
// as a conflict. Read with devices:read, changed with enrollment:write.
import { useState, type ChangeEvent } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { Trash2, Upload } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useDebounced } from "../ui/useDebounced";
import { useLocalPage } from "../ui/useLocalPage";
import { LabelChips } from "../devices/LabelChips";

type Entry = RouterOutputs["preauthorizedDevices"]["list"]["items"][number];

export function PreauthorizedCard() {
  const canWrite = useCan("enrollment:write");
  const page = useLocalPage(25);
  const [search, setSearch] = useState("");
  const debounced = useDebounced(search.trim(), 300);
  const [importing, setImporting] = useState(false);
  const [removing, setRemoving] = useState<Entry | null>(null);
  const entries = useQuery({ ...q.preauthorizedDevices.list.options({ ...page.input, search: debounced || undefined }), placeholderData: keepPreviousData });

  const columns: Column<Entry>[] = [
    { id: "id", header: "Device id", cell: (e) => <code>{e.deviceId}</code> },
    {
      id: "key",
      header: "Must enroll with",
      cell: (e) => (
        <div className="stacked-cell">
          {e.keyFingerprint && <span>key <code title={`sha256:${e.keyFingerprint}`}>{e.keyFingerprint.slice(0, 16)}…</code></span>}
          {e.ekHash && <span>TPM EK <code title={`sha256:${e.ekHash}`}>{e.ekHash.slice(0, 16)}…</code></span>}
          {!e.keyFingerprint && !e.ekHash && <span className="faint">any key</span>}
        </div>
      ),
    },
    { id: "labels", header: "Labels", cell: (e) => <LabelChips labels={e.labels} max={4} /> },
    {
      id: "admitted",
      header: "Admitted",
      cell: (e) => e.enrolledDeviceId
        ? <span><Link to="/devices/$deviceId" params={{ deviceId: e.enrolledDeviceId }}>the device</Link>{e.usedAt && <span className="faint"> <RelativeTime value={e.usedAt} /></span>}</span>
        : <span className="faint">not yet</span>,
    },
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (e: Entry) => <Button size="small" variant="ghost" icon={<Trash2 />} onClick={() => setRemoving(e)} aria-label={`Remove ${e.deviceId}`}>Remove</Button>,
    }] : []),
  ];

  return (
    <Card
      title="Pre-authorized devices"
      flush
      actions={
        <div className="row row--tight">
          <input className="input" type="search" placeholder="Device id contains…" value={search} onChange={(e) => { setSearch(e.target.value); page.onOffset(0); }} aria-label="Search pre-authorized devices" />
          {canWrite && <Button icon={<Upload />} onClick={() => setImporting(true)}>Import list…</Button>}
        </div>
      }
    >
      <QueryTable
        query={entries}
        what="pre-authorized devices"
        caption="Pre-authorized devices"
        columns={columns}
        rowKey={(e) => e.id}
        page={page}
        pageLabel="Pre-authorized device pages"
        empty={
          <Empty title={debounced ? "No listed id matches" : "No device is pre-authorized"}>
            Import the factory's list: a device enrolling with a listed id is admitted with the entry's labels, with any token.
          </Empty>
        }
      />
      {importing && <ImportDialog onClose={() => setImporting(false)} />}
      {removing && <RemoveDialog entry={removing} onClose={() => setRemoving(null)} />}
    </Card>
  );
}

/** A JSON list ([...] or { devices: [...] }) or CSV with a header row: what the import operation takes. */
function importBody(text: string): { devices: unknown[] } | { csv: string } {
  const trimmed = text.trim();
  if (trimmed.startsWith("[") || trimmed.startsWith("{")) {
    const parsed = JSON.parse(trimmed) as unknown;
    return { devices: Array.isArray(parsed) ? parsed : ((parsed as { devices?: unknown[] }).devices ?? []) };
  }
  return { csv: text };
}

function ImportDialog({ onClose }: { onClose: () => void }) {
  const [text, setText] = useState("");
  const [parseProblem, setParseProblem] = useState<string | null>(null);
  const run = useAction({ mutationFn: (body: { devices: unknown[] } | { csv: string }) => q.preauthorizedDevices.import.call(body) }, {
    invalidates: [q.preauthorizedDevices.key()],
    success: (d) => `Imported: ${d.created} added, ${d.updated} replaced`,
    onSuccess: onClose,
  });
  const onFile = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    if (file) setText(await file.text());
  };
  const body = () => {
    try {
      setParseProblem(null);
      return importBody(text);
    } catch (err) {
      setParseProblem(`Not valid JSON: ${(err as Error).message}`);
      throw err;
    }
  };
  return (
    <Dialog open onClose={onClose} title="Import pre-authorized devices">
      <form className="stack" onSubmit={run.submit(body, { valid: text.trim().length > 0 })}>
        <p>
          CSV with a header row (<code>deviceId,keyFingerprint,publicKey,ekHash,labels</code>, labels as <code>"site=berlin,tier=edge"</code>)
          or JSON (<code>[{"{"} "deviceId": "...", "labels": {"{"} ... {"}"} {"}"}]</code>). Listed ids are added or replaced; a bad entry is named and nothing is imported.
        </p>
        <div className="field">
          <label htmlFor="preauthorized-file">File</label>
          <input id="preauthorized-file" type="file" accept=".csv,.json,text/csv,application/json" onChange={(e) => void onFile(e)} />
        </div>
        <div className="field">
          <label htmlFor="preauthorized-text">List</label>
          <textarea id="preauthorized-text" className="input mono" rows={8} value={text} onChange={(e) => setText(e.target.value)} aria-describedby={parseProblem ? "preauthorized-problem" : undefined} />
          {parseProblem && <span id="preauthorized-problem" className="field__error">{parseProblem}</span>}
        </div>
        <FormFooter action={run} onCancel={onClose} disabled={!text.trim()} submitLabel="Import" />
      </form>
    </Dialog>
  );
}

function RemoveDialog({ entry, onClose }: { entry: Entry; onClose: () => void }) {
  const remove = useAction({ mutationFn: () => q.preauthorizedDevices.delete.call({ id: entry.id }) }, {
    invalidates: [q.preauthorizedDevices.key()],
    success: `${entry.deviceId} is no longer pre-authorized`,
  });
  return (
    <ConfirmDialog open onClose={onClose} title={`Remove ${entry.deviceId}?`} confirmLabel="Remove entry" action={remove}>
      <p>A device that enrolls with this id from now on is treated as any other. {entry.enrolledDeviceId ? "The device it admitted stays admitted." : ""}</p>
    </ConfirmDialog>
  );
}
