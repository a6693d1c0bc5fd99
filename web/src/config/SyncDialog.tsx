// "Sync now" asks first: the source's branch is fetched and planned (POST .../sources/{id}/plan,
// nothing written) and the diff is shown per resource (create, update with each changed field
// old → new, unchanged, delete, refused with file and line, exists but not managed); only when
// the person confirms does the sync apply it (POST .../sources/{id}/sync with the plan's commit as
// expectedCommit: if the branch moved in between, the service applies nothing and answers 409,
// and the dialog offers to plan again). A plan with a refused document offers no apply: the sync
// would refuse as a whole.
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { Check, GitCommitHorizontal } from "lucide-react";
import { q } from "../api/query";
import { statusOf } from "../api/client";
import { useSession } from "../app/session";
import { Button } from "../ui/Button";
import { DataTable, type Column } from "../ui/DataTable";
import { Dialog } from "../ui/Dialog";
import { ErrorBox, ErrorState, Loading } from "../ui/states";
import { useAction } from "../ui/useAction";
import { shortCommit } from "../ui/ManagedMark";
import { ACTION_LABEL, ACTION_TONE, applicable, valueText, whereText, type ConfigSource, type PlanEntry, type SourcePlan } from "./source-form";
import { counted } from "../../../src/lib/plural";

/** The lists of the six kinds a source applies (their owner marks change with it). */
export const KIND_KEYS = [q.deployments.key(), q.alertRules.key(), q.notificationTargets.key(), q.roles.key(), q.registries.key()];
/** Every list a sync can change: the config sources (their last sync, history, resources) and the kinds' lists. */
export const SYNC_INVALIDATES = [q.config.key(), ...KIND_KEYS];

export function SyncDialog({ source, onClose }: { source: ConfigSource; onClose: () => void }) {
  const session = useSession();
  const input = { orgId: session.organization.id, id: source.id };
  const plan = useQuery({
    queryKey: [...q.config.key(), "sourcePlan", source.id],
    queryFn: () => q.config.sourcesPlan.call(input),
    staleTime: 0, gcTime: 0, retry: false, refetchOnWindowFocus: false,
  });
  const [result, setResult] = useState<{ status: string; commit: string | null; message: string } | null>(null);
  const sync = useAction({ mutationFn: (expectedCommit: string | undefined) => q.config.sourcesSync.call({ ...input, expectedCommit }) }, {
    invalidates: SYNC_INVALIDATES,
    success: (r) => (r.status === "applied" ? `${source.name}: ${r.message}` : `${source.name}: sync ${r.status}`),
    onSuccess: (r) => setResult(r),
  });
  const planned = plan.data;
  const canApply = planned !== undefined && applicable(planned) && result === null && !plan.isFetching;
  // 409: the branch moved after the plan; nothing was applied
  const moved = sync.error != null && statusOf(sync.error) === 409;
  const planAgain = () => {
    sync.reset();
    void plan.refetch();
  };

  return (
    <Dialog
      open
      wide
      onClose={onClose}
      title={`Sync “${source.name}”`}
      footer={
        <>
          <Button onClick={onClose} disabled={sync.isPending}>{result ? "Close" : "Cancel"}</Button>
          {result === null && (
            <Button variant="primary" icon={<Check />} busy={sync.isPending} disabled={!canApply || moved} onClick={() => void sync.run(planned?.commit ?? undefined)}>
              {planned?.commit ? `Apply ${shortCommit(planned.commit)}` : "Apply"}
            </Button>
          )}
        </>
      }
    >
      <div className="stack">
        <p className="muted">
          <span className="mono">{source.url}</span> · branch <span className="mono">{source.branch}</span> · folder <span className="mono">{source.path}</span>
        </p>
        {plan.isPending ? (
          <Loading label={`Fetching ${source.branch} and planning`} />
        ) : plan.isError ? (
          <ErrorState error={plan.error} retry={() => void plan.refetch()} />
        ) : (
          <PlanView plan={plan.data} />
        )}
        {sync.error != null && <ErrorBox error={sync.error} />}
        {moved && <div className="row"><Button onClick={planAgain}>Plan again</Button></div>}
        {result && <SyncOutcome result={result} />}
      </div>
    </Dialog>
  );
}

/** The sync's outcome; it applied the planned commit (expectedCommit) or nothing. */
function SyncOutcome({ result }: { result: { status: string; commit: string | null; message: string } }) {
  const tone = result.status === "applied" ? "success" : "error";
  return (
    <div className={`alert-box alert-box--${tone}`} role="status" data-testid="sync-outcome">
      <div className="stack stack--tight">
        <p><strong>{result.status === "applied" ? "Applied" : result.status === "refused" ? "Refused: nothing changed" : "Failed: nothing changed"}</strong> · {result.message}</p>
      </div>
    </div>
  );
}

/** The plan: what could not be planned, or the counts and one row per resource. */
export function PlanView({ plan }: { plan: SourcePlan }) {
  if (plan.failure !== null) {
    return <div className="alert-box alert-box--error" role="alert"><p>Could not plan: {plan.failure}</p></div>;
  }
  const s = plan.summary!;
  const counts = ([["create", s.create], ["update", s.update], ["delete", s.delete], ["unchanged", s.unchanged], ["refused", s.refused], ["exists_unmanaged", s.exists_unmanaged]] as const).filter(([, n]) => n > 0);
  return (
    <div className="stack">
      <p className="row" data-testid="plan-summary">
        {plan.commit && <span className="badge"><GitCommitHorizontal aria-hidden="true" /> <span className="mono">{shortCommit(plan.commit)}</span></span>}
        {counts.length === 0 ? <span className="muted">No documents in the folder.</span> : counts.map(([action, n]) => (
          <span key={action} className={`badge ${ACTION_TONE[action]}`}>{n} {ACTION_LABEL[action]}</span>
        ))}
      </p>
      {s.refused > 0 && (
        <div className="alert-box alert-box--warning" role="note">
          <p>{counted(s.refused, "document")} refused: a sync would change nothing. Fix {s.refused === 1 ? "it" : "them"} in Git and plan again.</p>
        </div>
      )}
      {plan.resources.length > 0 && <DataTable caption="Planned changes" columns={PLAN_COLUMNS} rows={plan.resources} rowKey={(r) => `${r.kind}/${r.name ?? ""}/${r.file ?? ""}/${r.line ?? ""}`} />}
    </div>
  );
}

const PLAN_COLUMNS: Column<PlanEntry>[] = [
  { id: "action", header: "Action", className: "nowrap", cell: (r) => <span className={`badge ${ACTION_TONE[r.action]}`}>{ACTION_LABEL[r.action]}</span> },
  { id: "resource", header: "Resource", cell: (r) => <div className="stacked-cell"><strong>{r.name ?? "(unnamed)"}</strong><span className="faint">{r.kind}</span></div> },
  { id: "what", header: "What changes", cell: (r) => <EntryDetail entry={r} /> },
];

function EntryDetail({ entry }: { entry: PlanEntry }) {
  const where = whereText(entry);
  return (
    <div className="stack stack--tight plan-detail">
      {entry.changes.length > 0 && (
        <ul className="plan-changes">
          {entry.changes.map((c) => (
            <li key={c.field}>
              <span className="mono">{c.field}</span>: <del className="mono">{valueText(c.old)}</del> → <ins className="mono">{valueText(c.new)}</ins>
            </li>
          ))}
        </ul>
      )}
      {entry.message && <span className={entry.action === "refused" ? "field__error" : "muted"}>{entry.message}</span>}
      {entry.pendingSecrets.length > 0 && <span className="faint">waits for {entry.pendingSecrets.join(", ")} (set it through the API)</span>}
      {where && <span className="faint mono">{where}</span>}
    </div>
  );
}
