// What a sync did, as the API answers it: the Git sync result object (found, imported,
// updated, errors, rejected manifests with their paths and reasons, duration, commit), and an
// OCI sync record (per repository, skipped tags with their reasons).
import type { RouterOutputs } from "../api/client";
import { DataTable, type Column } from "../ui/DataTable";
import { formatDateTime, RelativeTime } from "../ui/time";
import { shortRevision } from "../applications/catalog";
import { formatDuration } from "./forms";

export type GitSyncResult = RouterOutputs["registries"]["git"]["sync"];
export type OciSyncRecord = RouterOutputs["registries"]["oci"]["sync"];

type Rejected = GitSyncResult["rejectedManifests"][number];
const REJECTED_COLUMNS: Column<Rejected>[] = [
  { id: "path", header: "Path", cell: (r) => <span className="mono">{r.path}</span> },
  { id: "reason", header: "Reason", cell: (r) => r.reason },
];

export function GitSyncReport({ result }: { result: GitSyncResult }) {
  return (
    <div className="stack">
      <p role="status" className={result.success ? "sync-outcome sync-outcome--ok" : "sync-outcome sync-outcome--failed"}>
        {result.success ? "The sync completed." : "The sync failed."}
      </p>
      <dl className="facts" aria-label="Sync result">
        <dt>Found</dt><dd className="num">{result.applicationsFound}</dd>
        <dt>Imported</dt><dd className="num">{result.applicationsImported}</dd>
        <dt>Updated</dt><dd className="num">{result.applicationsUpdated}</dd>
        <dt>Rejected</dt><dd className="num">{result.rejectedManifests.length}</dd>
        <dt>Errors</dt><dd className="num">{result.errors.length}</dd>
        <dt>Duration</dt><dd>{formatDuration(result.syncDuration)}</dd>
        <dt>Commit</dt><dd className="mono" title={result.commit}>{shortRevision(result.commit) || <span className="faint">none (the fetch failed)</span>}</dd>
      </dl>
      {result.errors.length > 0 && <ErrorList errors={result.errors} />}
      {result.rejectedManifests.length > 0 && (
        <section aria-labelledby="rejected-title" className="stack stack--tight">
          <h3 id="rejected-title">Rejected manifests</h3>
          <DataTable caption="Rejected manifests" columns={REJECTED_COLUMNS} rows={result.rejectedManifests} rowKey={(r) => r.path} />
        </section>
      )}
    </div>
  );
}

function ErrorList({ errors }: { errors: string[] }) {
  return (
    <div className="alert-box alert-box--error" role="alert">
      <ul className="warning-list">{errors.map((e, i) => <li key={i}>{e}</li>)}</ul>
    </div>
  );
}

type RepositoryReport = OciSyncRecord["perRepository"][number];
const REPOSITORY_COLUMNS: Column<RepositoryReport>[] = [
  { id: "repository", header: "Repository", cell: (r) => <span className="mono">{r.repository}</span> },
  { id: "tags", header: "Tags", className: "num", cell: (r) => r.tagCount },
  { id: "found", header: "Found", className: "num", cell: (r) => r.found },
  { id: "imported", header: "Imported", className: "num", cell: (r) => r.imported },
  { id: "updated", header: "Updated", className: "num", cell: (r) => r.updated },
  { id: "errors", header: "Errors", cell: (r) => r.errors.join("; ") || <span className="faint">none</span> },
];
type SkippedTag = OciSyncRecord["skipped"][number];
const SKIPPED_COLUMNS: Column<SkippedTag>[] = [
  { id: "repository", header: "Repository", cell: (s) => <span className="mono">{s.repository}</span> },
  { id: "tag", header: "Tag", cell: (s) => <span className="mono">{s.tag}</span> },
  { id: "reason", header: "Reason", cell: (s) => s.reason },
];

export function OciSyncReport({ record }: { record: OciSyncRecord }) {
  return (
    <div className="stack">
      <dl className="facts" aria-label={`Sync run of ${formatDateTime(record.createdAt)}`}>
        <dt>Status</dt><dd><span className={`badge badge--${record.status === "success" ? "success" : "danger"}`}>{record.status}</span></dd>
        <dt>When</dt><dd><RelativeTime value={record.createdAt} /></dd>
        <dt>Repositories</dt><dd className="num">{record.repositoriesFound}</dd>
        <dt>Found</dt><dd className="num">{record.applicationsFound}</dd>
        <dt>Imported</dt><dd className="num">{record.applicationsImported}</dd>
        <dt>Updated</dt><dd className="num">{record.applicationsUpdated}</dd>
        <dt>Duration</dt><dd>{formatDuration(record.syncDurationMs)}</dd>
      </dl>
      {record.errors.length > 0 && <ErrorList errors={record.errors} />}
      {record.perRepository.length > 0 && <DataTable caption="Repositories read" columns={REPOSITORY_COLUMNS} rows={record.perRepository} rowKey={(r) => r.repository} />}
      {record.skipped.length > 0 && <DataTable caption="Skipped tags" columns={SKIPPED_COLUMNS} rows={record.skipped} rowKey={(s) => `${s.repository}:${s.tag}`} />}
    </div>
  );
}
