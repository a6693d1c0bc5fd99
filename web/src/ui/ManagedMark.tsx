// The owner mark of a resource managed as code (docs/config-as-code.md): deployments, alert
// rules, notification targets, roles and Git and OCI registries applied from documents carry
// `managedBy` ("source:<name>" for a config source, "apply:<who>" for a direct apply) and
// `managedCommit`. Every list and page of those kinds shows the mark with ManagedMark, and
// offers no edit, enable/disable or delete for a managed row (ManagedGate): the API would answer
// 409, and the change belongs in the documents.
import type { ReactNode } from "react";
import { Link } from "@tanstack/react-router";
import { GitCommitHorizontal } from "lucide-react";
import { Card, PageHeader } from "./Card";
import { Empty } from "./states";

export interface Owned {
  managedBy?: string | null;
  managedCommit?: string | null;
}

/** Any resource: the kinds that cannot be managed as code (a global registry) have no mark. */
type Resource = Owned | object;
const markOf = (resource: Resource): Owned => resource as Owned;

export const isManaged = (resource: Resource): boolean => !!markOf(resource).managedBy;

/** "3f2a9c1" of a 40-digit commit id. */
export const shortCommit = (commit: string): string => commit.slice(0, 7);

/** The config source's name when the owner is one ("source:main" → "main"). */
export function sourceOf(owner: string): string | null {
  return owner.startsWith("source:") ? owner.slice("source:".length) : null;
}

/** In words, for the badge's accessible name and tooltip. */
export function ownerText({ managedBy, managedCommit }: Owned): string {
  if (!managedBy) return "managed through the API";
  const source = sourceOf(managedBy);
  return `Managed as code by ${source !== null ? `config source ${source}` : managedBy}${managedCommit ? `, commit ${shortCommit(managedCommit)}` : ""}`;
}

/** A badge naming the owner and the commit; nothing for a resource the API manages. */
export function ManagedMark({ resource: row }: { resource: Resource }) {
  const resource = markOf(row);
  if (!resource.managedBy) return null;
  const source = sourceOf(resource.managedBy);
  const text = ownerText(resource);
  return (
    <span className="badge badge--managed" title={`${text}: change it in its documents`} data-testid="managed-mark">
      <GitCommitHorizontal aria-hidden="true" />
      <span className="visually-hidden">{text}</span>
      <span aria-hidden="true">
        {source !== null ? source : resource.managedBy}
        {resource.managedCommit && <> @ <span className="mono">{shortCommit(resource.managedCommit)}</span></>}
      </span>
    </span>
  );
}

/**
 * A row's or page's write controls, unless the resource is managed as code: then a short
 * note instead (the Configuration page, for a config source's resources), never the controls;
 * `open` are those the ownership guard lets through for it (setting a secret).
 */
export function ManagedGate({ resource: row, children, open }: { resource: Resource; children: ReactNode; open?: ReactNode }) {
  const resource = markOf(row);
  if (!resource.managedBy) return <>{children}</>;
  return (
    <>
      {open}
      <span className="faint managed-note">
        {sourceOf(resource.managedBy) !== null ? <>Change it in Git (<Link to="/config">Configuration</Link>)</> : "Change it in its documents"}
      </span>
    </>
  );
}

/** An edit page opened for a managed resource (a bookmark, a typed address): why there is no form. */
export function ManagedEditState({ title, resource, back }: { title: string; resource: Owned; back: ReactNode }) {
  return (
    <>
      <PageHeader title={title} />
      <Card>
        <Empty title="This is managed as code" action={back}>
          {ownerText(resource)}. Change it in its documents; the next sync or apply changes it here.
        </Empty>
      </Card>
    </>
  );
}
