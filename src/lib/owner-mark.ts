// The owner mark of a resource managed as code (docs/config-as-code.md): who applied it (a
// config source, "source:<name>", or a direct apply, "apply:<who>") and from which commit.
// Deployments, alert rules, notification targets, roles and Git and OCI registries show it in
// their get and list answers, so a client (the console) can tell a managed resource from one
// the API manages, and offer no edit for it (the API answers 409 anyway).
import { z } from "zod";

export const ownerMarkOutput = {
  managedBy: z.string().nullable().describe("the owner when the resource is managed as code (source:<name> or apply:<who>); null = managed through the API"),
  managedCommit: z.string().nullable().describe("the Git commit its documents came from, when known"),
};

export type OwnerMark = { managedBy: string | null; managedCommit: string | null };

export const ownerMark = (row: OwnerMark): OwnerMark => ({ managedBy: row.managedBy, managedCommit: row.managedCommit });
