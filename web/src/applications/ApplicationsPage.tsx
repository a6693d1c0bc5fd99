// The application catalog: every application with its icon, name, tags, latest version and
// number of versions; text search, a tag filter and a source-registry filter, all in the URL
// (search.ts), paged by the API.
import { useEffect, useState } from "react";
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Search, X } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { Empty, Forbidden } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useDebounced } from "../ui/useDebounced";
import type { Application } from "./catalog";
import { AppIcon } from "./AppIcon";
import { CATALOG_PAGE_SIZE } from "./search";
import "./applications.css";

export function ApplicationsPage() {
  const canRead = useCan("applications:read");
  if (!canRead) {
    return (
      <>
        <PageHeader title="Applications" />
        <Card><Forbidden what="the application catalog" /></Card>
      </>
    );
  }
  return <Catalog />;
}

function Catalog() {
  const canAddRegistry = useCan("registries:write");
  const search = useSearch({ from: "/app/applications" });
  const navigate = useNavigate({ from: "/applications" });
  const offset = search.offset ?? 0;
  const [text, setText] = useState(search.q ?? "");
  const settled = useDebounced(text.trim(), 300);
  useEffect(() => {
    if (settled !== (search.q ?? "")) void navigate({ search: (prev) => ({ ...prev, q: settled || undefined, offset: undefined }), replace: true });
  }, [settled]); // eslint-disable-line react-hooks/exhaustive-deps

  const input = { limit: CATALOG_PAGE_SIZE, offset, ...(search.q ? { q: search.q } : {}), ...(search.tag ? { tag: search.tag } : {}), ...(search.registry ? { registryId: search.registry } : {}) };
  const apps = useQuery({ ...q.applications.list.options(input), placeholderData: keepPreviousData });
  const filtered = !!(search.q || search.tag || search.registry);

  const columns: Column<Application>[] = [
    {
      id: "name",
      header: "Application",
      cell: (a) => (
        <div className="app-cell">
          <AppIcon app={a} />
          <div className="stacked-cell">
            <Link to="/applications/$applicationId" params={{ applicationId: a.id }}><strong>{a.name}</strong></Link>
            <span className="faint mono">{a.key}</span>
          </div>
        </div>
      ),
    },
    {
      id: "tags",
      header: "Tags",
      cell: (a) => a.tags.length === 0 ? <span className="faint">none</span> : (
        <ul className="chips" aria-label={`Tags of ${a.name}`}>
          {a.tags.map((t) => (
            <li key={t}><Link className="chip" to="/applications" search={(prev) => ({ ...prev, tag: t, offset: undefined })} aria-label={`Show applications tagged ${t}`}>{t}</Link></li>
          ))}
        </ul>
      ),
    },
    { id: "latest", header: "Latest version", cell: (a) => <span className="mono">{a.latestVersion}</span> },
    { id: "versions", header: "Versions", className: "num", cell: (a) => a.versionCount },
    { id: "source", header: "Source", cell: (a) => <span>{a.source.registryName ?? <span className="faint">deleted registry</span>} <span className="faint">({a.source.type === "git" ? "Git" : "OCI"})</span></span> },
    { id: "updated", header: "Updated", cell: (a) => <RelativeTime value={a.updatedAt} /> },
  ];

  return (
    <>
      <PageHeader title="Applications" description="The organization's catalog: application packages imported from its Git and OCI registries and its marketplace store." />
      <Card title="Catalog" flush>
        <div className="toolbar catalog-filters">
          <div className="field">
            <label htmlFor="catalog-search">Search</label>
            <div className="row">
              <Search aria-hidden="true" className="faint" />
              <input id="catalog-search" className="input" type="search" value={text} maxLength={200} placeholder="Name, key, description or tag" onChange={(e) => setText(e.target.value)} />
            </div>
          </div>
          <TagFilter tag={search.tag} onChange={(tag) => void navigate({ search: (prev) => ({ ...prev, tag, offset: undefined }) })} />
          <RegistryFilter value={search.registry} onChange={(registry) => void navigate({ search: (prev) => ({ ...prev, registry, offset: undefined }) })} />
        </div>
        {/* The filtered-empty state is the catalog's own (a link, and what to try), so `empty` says both. */}
        <QueryTable
          query={apps}
          what="the application catalog"
          caption="Applications"
          columns={columns}
          rowKey={(a) => a.id}
          page={{ offset, limit: CATALOG_PAGE_SIZE, onOffset: (o) => void navigate({ search: (prev) => ({ ...prev, offset: o || undefined }) }) }}
          pageLabel="Application pages"
          empty={filtered ? (
            <Empty title="No application matches" action={<Link to="/applications" search={{}}>Clear the filters</Link>}>Try another search, tag or registry.</Empty>
          ) : (
            <Empty title="The catalog is empty" action={canAddRegistry ? <Link to="/registries">Add a registry</Link> : undefined}>
              {canAddRegistry
                ? "Applications come from registries: add a Git or OCI registry holding application manifests and sync it, or set up the marketplace store."
                : "Applications come from registries, which someone allowed to change them adds and syncs."}
            </Empty>
          )}
        />
      </Card>
    </>
  );
}

function TagFilter({ tag, onChange }: { tag: string | undefined; onChange: (tag: string | undefined) => void }) {
  const [text, setText] = useState(tag ?? "");
  useEffect(() => setText(tag ?? ""), [tag]);
  return (
    <form className="field" onSubmit={(e) => { e.preventDefault(); onChange(text.trim() || undefined); }}>
      <label htmlFor="catalog-tag">Tag</label>
      <div className="row">
        <input id="catalog-tag" className="input" value={text} maxLength={200} placeholder="exact tag" onChange={(e) => setText(e.target.value)} onBlur={() => { if (text.trim() !== (tag ?? "")) onChange(text.trim() || undefined); }} />
        {tag && <Button size="small" variant="ghost" icon={<X />} aria-label={`Clear the tag filter ${tag}`} onClick={() => onChange(undefined)} />}
      </div>
    </form>
  );
}

/** The registries the catalog's applications can come from; shown to roles that may read registries. */
function RegistryFilter({ value, onChange }: { value: string | undefined; onChange: (id: string | undefined) => void }) {
  const canReadRegistries = useCan("registries:read");
  const git = useQuery({ ...q.registries.git.list.options({ limit: 200, offset: 0 }), enabled: canReadRegistries });
  const oci = useQuery({ ...q.registries.oci.list.options({ limit: 200, offset: 0 }), enabled: canReadRegistries });
  if (!canReadRegistries) return null;
  return (
    <div className="field">
      <label htmlFor="catalog-registry">Source registry</label>
      <select id="catalog-registry" className="select" value={value ?? ""} onChange={(e) => onChange(e.target.value || undefined)}>
        <option value="">Every registry</option>
        {git.data && git.data.items.length > 0 && (
          <optgroup label="Git">
            {git.data.items.map((r) => <option key={r.id} value={r.id}>{r.name}</option>)}
          </optgroup>
        )}
        {oci.data && oci.data.items.length > 0 && (
          <optgroup label="OCI">
            {oci.data.items.map((r) => <option key={r.id} value={r.id}>{r.name}</option>)}
          </optgroup>
        )}
      </select>
    </div>
  );
}
