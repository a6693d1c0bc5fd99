// An application: its description, and each version (newest first) with its release notes,
// deployment profiles, parameters, admission warnings and provenance. Deleting the package is
// refused by the API while a deployment uses it: the dialog shows that refusal as it comes.
import { useState } from "react";
import { Link, useNavigate, useParams } from "@tanstack/react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { AlertTriangle, Lock, Trash2 } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { DataTable, type Column } from "../ui/DataTable";
import { ConfirmDialog } from "../ui/Dialog";
import { Pagination } from "../ui/Pagination";
import { Empty, ErrorState, Forbidden, Loading } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useToast } from "../ui/toast";
import { AppIcon } from "./AppIcon";
import {
  parameterConstraints, parameterDefault, parameterType, profileArchitectures, profileResources, revisionLabel, shortRevision,
  type Parameter, type Profile, type Version,
} from "./catalog";
import "./applications.css";

const VERSIONS_PER_PAGE = 10;

export function ApplicationPage() {
  const canRead = useCan("applications:read");
  if (!canRead) return <><PageHeader title="Application" /><Card><Forbidden what="the application catalog" /></Card></>;
  return <Application />;
}

function Application() {
  const { applicationId } = useParams({ from: "/app/applications/$applicationId" });
  const canWrite = useCan("applications:write");
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const toast = useToast();
  const [deleting, setDeleting] = useState(false);
  const app = useQuery(q.applications.get.options({ id: applicationId }));
  const breadcrumb = <Link to="/applications">Applications</Link>;

  if (app.isPending) return <><PageHeader title="Application" breadcrumb={breadcrumb} /><Loading /></>;
  if (app.isError) return <><PageHeader title="Application" breadcrumb={breadcrumb} /><Card><ErrorState error={app.error} what="this application" retry={() => app.refetch()} /></Card></>;
  const a = app.data;

  return (
    <>
      <PageHeader
        breadcrumb={breadcrumb}
        title={<span className="app-cell"><AppIcon app={a} size={40} /> {a.name}</span>}
        description={a.description}
        actions={canWrite && <Button variant="danger" icon={<Trash2 />} onClick={() => setDeleting(true)}>Delete package</Button>}
      />
      <div className="stack">
        <Card title="About">
          <dl className="facts">
            <dt>Key</dt><dd className="mono">{a.key}</dd>
            <dt>Latest version</dt><dd className="mono">{a.latestVersion}</dd>
            <dt>Versions</dt><dd>{a.versionCount}</dd>
            <dt>Category</dt><dd>{a.category ?? <span className="faint">none</span>}</dd>
            <dt>Tags</dt><dd>{a.tags.length ? a.tags.join(", ") : <span className="faint">none</span>}</dd>
            <dt>Vendor</dt><dd>{a.vendor ? <>{a.vendor.name}{a.vendor.site && <> · <span className="mono">{a.vendor.site}</span></>}</> : <span className="faint">none</span>}</dd>
            <dt>Updated</dt><dd><RelativeTime value={a.updatedAt} /></dd>
          </dl>
        </Card>
        <Versions applicationId={a.id} />
      </div>
      <ConfirmDialog
        open={deleting}
        onClose={() => setDeleting(false)}
        title={`Delete “${a.name}”?`}
        confirmLabel="Delete package"
        onConfirm={async () => {
          const deleted = await q.applications.delete.call({ id: a.id });
          toast.success(`“${a.name}” deleted with its ${deleted.deletedVersions} ${deleted.deletedVersions === 1 ? "version" : "versions"}`);
          // The cached catalog still lists it (with its icon, now gone): read it afresh.
          queryClient.removeQueries({ queryKey: q.applications.list.key() });
          await navigate({ to: "/applications" });
          queryClient.removeQueries({ queryKey: q.applications.get.key({ id: a.id }) });
        }}
      >
        <p>
          The package and all its {a.versionCount} {a.versionCount === 1 ? "version" : "versions"} leave the catalog. The service refuses while a deployment uses it.
          A later sync of a registry that still holds its manifests imports it again.
        </p>
      </ConfirmDialog>
    </>
  );
}

function Versions({ applicationId }: { applicationId: string }) {
  const [offset, setOffset] = useState(0);
  const versions = useQuery({ ...q.applications.versions.options({ id: applicationId, limit: VERSIONS_PER_PAGE, offset }), placeholderData: keepPreviousData });
  return (
    <Card title="Versions">
      {versions.isPending ? <Loading /> : versions.isError ? <ErrorState error={versions.error} retry={() => versions.refetch()} /> : versions.data.items.length === 0 ? (
        <Empty title="No versions">The registry it came from holds no admitted version any more.</Empty>
      ) : (
        <div className="stack">
          <ol className="version-list" aria-label="Versions, newest first">
            {versions.data.items.map((v) => <VersionItem key={v.id} version={v} />)}
          </ol>
          <Pagination label="Version pages" offset={offset} limit={VERSIONS_PER_PAGE} total={versions.data.total} onOffset={setOffset} />
        </div>
      )}
    </Card>
  );
}

function VersionItem({ version: v }: { version: Version }) {
  const headingId = `version-${v.id}`;
  const parameters = Object.entries(v.parameters);
  return (
    <li className="version">
      <section aria-labelledby={headingId} className="stack">
        <div className="version__header">
          <h3 id={headingId}>Version <span className="mono">{v.version}</span></h3>
          <span className="faint">imported <RelativeTime value={v.createdAt} /></span>
        </div>
        <div>
          <h4 className="field__label">Release notes</h4>
          {v.description ? <p className="release-notes">{v.description}</p> : <p className="faint">none given</p>}
        </div>
        {v.warnings.length > 0 && (
          <div className="alert-box alert-box--warning" role="note" aria-label={`Admission warnings of ${v.version}`}>
            <AlertTriangle aria-hidden="true" />
            <ul className="warning-list">{v.warnings.map((w) => <li key={w}>{w}</li>)}</ul>
          </div>
        )}
        <DataTable caption={`Deployment profiles of ${v.version}`} columns={PROFILE_COLUMNS} rows={v.profiles} rowKey={(p) => p.id} empty={<span className="faint">No admitted profile.</span>} />
        {parameters.length === 0 ? <p className="faint">No parameters.</p> : (
          <DataTable caption={`Parameters of ${v.version}`} columns={PARAMETER_COLUMNS} rows={parameters} rowKey={([name]) => name} />
        )}
        <dl className="facts" aria-label={`Provenance of ${v.version}`}>
          <dt>Registry</dt><dd>{v.source.registryName ?? <span className="faint">deleted</span>} <span className="faint">({v.source.type === "git" ? "Git" : "OCI"})</span></dd>
          <dt>{v.source.type === "git" ? "Manifest path" : "Reference"}</dt><dd className="mono">{v.source.path}</dd>
          <dt>{revisionLabel(v.source) === "commit" ? "Commit" : "Digest"}</dt><dd className="mono" title={v.source.revision}>{shortRevision(v.source.revision) || <span className="faint">unknown</span>}</dd>
          <dt>Manifest digest</dt><dd className="mono" title={v.manifestDigest}>{shortRevision(v.manifestDigest)}</dd>
        </dl>
      </section>
    </li>
  );
}

const PROFILE_COLUMNS: Column<Profile>[] = [
  { id: "id", header: "Profile", cell: (p) => <div className="stacked-cell"><strong className="mono">{p.id}</strong>{p.description && <span className="faint">{p.description}</span>}</div> },
  { id: "type", header: "Type", cell: (p) => <span className="badge">{p.type}</span> },
  { id: "components", header: "Components", cell: (p) => <ul className="chips">{p.components.map((c) => <li key={c.name}><span className="chip mono" title={`${c.properties.repository} ${c.properties.revision}`}>{c.name}</span></li>)}</ul> },
  { id: "resources", header: "Required resources", cell: (p) => profileResources(p) },
  { id: "archs", header: "Architectures", cell: (p) => profileArchitectures(p) },
];

const PARAMETER_COLUMNS: Column<[string, Parameter]>[] = [
  { id: "name", header: "Parameter", cell: ([name, p]) => <div className="stacked-cell"><strong className="mono">{name}</strong>{p.description && <span className="faint">{p.description}</span>}</div> },
  { id: "type", header: "Type", cell: ([, p]) => parameterType(p) },
  { id: "default", header: "Default", cell: ([, p]) => <span className="mono">{parameterDefault(p)}</span> },
  { id: "constraints", header: "Constraints", cell: ([, p]) => parameterConstraints(p).join("; ") || <span className="faint">none</span> },
  { id: "secret", header: "Secret", cell: ([, p]) => p.secret ? <span className="badge badge--warning"><Lock aria-hidden="true" />secret</span> : <span className="faint">no</span> },
];
