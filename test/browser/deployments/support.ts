// Applications for the deployment pages' tests, imported the way an operator imports them: a
// Git registry served over smart HTTP on loopback (test/support/git-server), created and
// synced through the public API of the service the browser drives.
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import type { ConsoleService } from "../../support/console-service.js";
import { appYaml, component, type AppOptions } from "../../http/registries-git/support.js";

export { component };

export interface ImportedCatalog {
  git: GitServer;
  /** application ids by manifest id */
  apps: Record<string, string>;
}

/** Publishes `manifests` (manifest id -> options, version 1.0.0) in a Git repository and syncs a registry of it. */
export async function importApplications(service: ConsoleService, manifests: Record<string, AppOptions & { version?: string }>): Promise<ImportedCatalog> {
  const git = await startGitServer();
  const files = Object.fromEntries(Object.entries(manifests).map(([id, options]) => [`apps/${id}/app.yaml`, appYaml(id, options.version ?? "1.0.0", options)]));
  const { url } = await git.createRepo("catalog", files);
  const registry = await service.call<{ id: string }>("POST", "/api/v1/registries/git", { body: { name: "catalog", url } });
  const result = await service.call<{ success: boolean; applicationsImported: number; rejectedManifests: unknown[] }>("POST", `/api/v1/registries/git/${registry.id}/sync`);
  if (!result.success || result.applicationsImported !== Object.keys(manifests).length) throw new Error(`sync: ${JSON.stringify(result)}`);
  const list = await service.call<{ items: { id: string; key: string }[] }>("GET", "/api/v1/applications?limit=100");
  return { git, apps: Object.fromEntries(list.items.map((a) => [a.key, a.id])) };
}
