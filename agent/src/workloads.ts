// The real agent's DeploymentRuntime: compose profiles on a container engine (runtime/engine.ts).
//
//   download  fetch each component's compose file from the service (it reads the package with
//             the organization's registry credential, which never reaches the device), check its
//             sha256, render the deployment's parameters into it, write it under
//             releases/<deploymentId>/<revision>/<component>/ (beside the release that runs, also
//             for a new revision of the same deployment: an upgrade in place), and pull every
//             image it names (those of the
//             organization's private registries named at the service's registry proxy in that
//             file, and pulled from it with the package's pull grant: docs/agent.md, "Private
//             registries"), component by component
//   install   take the application's running release down, bring the new one up, and wait until
//             every container runs (healthy where a health check is declared) within the
//             component's timeout; when it does not, take it down and bring the previous release
//             up again from its own files (device-side rollback, whether the previous release came
//             from another deployment or from an earlier revision of this one), and fail with the
//             engine's words and what runs now (reported: rolledBackTo). Once the new release
//             runs, the files of the one it replaced go
//   remove    take the application's projects down (containers and networks; volumes too for a
//             component whose manifest says `removeVolumes: true`)
//
// One compose project per application component, named fleet-<application>-<component>, the
// same for every version: a release replaces the one before, and no crash can leave two. Every
// step is safe to begin again after a crash (the state machine restarts the step it was in): a
// download fetches again, an install takes down whatever the project holds first, and until
// installed.json names the new release the previous one's files are there to roll back to.
//
// Steps run one at a time, in the order they were begun: the engine's CLI is not made for
// concurrent compose runs of one project, and a device runs few deployments.
import { createHash } from "node:crypto";
import fs from "node:fs";
import type { DeploymentRuntime, LocalDeployment, Step, StepHandle, StepOutcome } from "./core/deployments.js";
import { succeeded, type ComponentPackage, type DeviceSession } from "./core/session.js";
import { composeImages, envParameters, renameImages, renderComposeFile } from "./runtime/compose-file.js";
import { waitUntilRunning, type ComposeEngine } from "./runtime/engine.js";
import type { StateDir } from "./state-dir.js";
import type { SystemImageInstaller } from "./os-update/deployment-hand-over.js";

/** What runs for one application: the release an upgrade replaces and a failed upgrade restores. */
export interface InstalledRelease {
  deploymentId: string;
  version: string;
  /** the compose projects of its components, with their directories */
  projects: Array<{ name: string; dir: string }>;
}

/**
 * A revision's directory under its deployment's: its version and a digest of what the install
 * is made of (version, profile, parameters). An upgrade in place (a new revision under the same
 * deployment id) is downloaded beside the release that runs, never over it.
 */
export function revisionDir(entry: Pick<LocalDeployment, "version" | "desired">): string {
  const digest = createHash("sha256").update(JSON.stringify([entry.version, entry.desired?.profile ?? null, entry.desired?.parameters ?? null])).digest("hex");
  return `${entry.version.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 64)}-${digest.slice(0, 12)}`;
}

/** Whether two releases are made of the same files (the same deployment and revision). */
function sameRelease(a: Array<{ dir: string }>, b: Array<{ dir: string }>): boolean {
  const dirs = new Set(a.map((p) => p.dir));
  return a.length === b.length && b.every((p) => dirs.has(p.dir));
}

interface Component {
  name: string;
  properties?: { type?: string; repository?: string; revision?: string; timeout?: string; removeVolumes?: boolean };
}

/** How to pull the images of the organization's private registries (docs/agent.md, "Private registries"): the router's type. */
type PullGrant = NonNullable<ComponentPackage["pullGrant"]>;

/** An image reference split into its repository (host lowercased) and its tag or digest suffix (":1", "@sha256:..."; ":latest" when none). */
export function splitImage(image: string): { repository: string; suffix: string } {
  const at = image.indexOf("@");
  const name = at >= 0 ? image.slice(0, at) : image;
  const colon = name.lastIndexOf(":");
  const hasTag = colon > name.lastIndexOf("/");
  const repository = hasTag ? name.slice(0, colon) : name;
  const suffix = at >= 0 ? image.slice(at) : hasTag ? name.slice(colon) : ":latest";
  const slash = repository.indexOf("/");
  return { repository: slash > 0 ? repository.slice(0, slash).toLowerCase() + repository.slice(slash) : repository, suffix };
}

/** Where the pull grant's credential is written while a pull runs (0600 in a 0700 directory), and removed after. */
const PULL_AUTH_DIR = "pull-auth";

export const PROJECT_PREFIX = "fleet-";
const DEFAULT_TIMEOUT_MS = 5 * 60_000;

export interface ComposeRuntimeOptions {
  engine: ComposeEngine;
  session: DeviceSession;
  state: StateDir;
  /** a step's outcome is known: heartbeat soon to report it */
  onSettled: () => void;
  log: (level: "info" | "warn" | "error", message: string) => void;
  /** polling of the containers while waiting for them; default 500 ms */
  pollMs?: number;
  /** the service's URL: its host is the registry proxy that private images are pulled from (and named at) */
  serviceUrl: string;
  /** installs a deployment's system image (os-update/deployment-hand-over.ts); absent: such a deployment fails */
  systemImages?: SystemImageInstaller;
}

/** `5m0s`, `90s`, `1h`: the manifest's component timeout in ms. */
export function parseGoDuration(text: string | undefined): number | null {
  if (!text) return null;
  const match = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s)?$/.exec(text.trim());
  if (!match || !match.slice(1).some(Boolean)) return null;
  return ((Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0)) * 60 + Number(match[3] ?? 0)) * 1000;
}

/** A project name the engines accept: lowercase letters, digits, '-' and '_'. */
export function projectName(applicationId: string, component: string): string {
  return `${PROJECT_PREFIX}${applicationId}-${component}`.toLowerCase().replace(/[^a-z0-9_-]/g, "-");
}

export class ComposeRuntime implements DeploymentRuntime {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: ComposeRuntimeOptions) {}

  begin(entry: Readonly<LocalDeployment>, step: Step): StepHandle {
    let settled: StepOutcome | null = null;
    const snapshot = { ...entry };
    const work = this.queue.then(() => this.run(snapshot, step));
    this.queue = work.catch(() => undefined);
    work.then(
      (outcome) => (settled = outcome),
      (error: Error) => (settled = { ok: false, message: `${step} failed: ${error.message}` }),
    ).finally(() => this.options.onSettled());
    return { dueAt: null, outcome: () => settled };
  }

  /** Runs `task` between deployment steps (a device action on an application), never during one. */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const work = this.queue.then(task);
    this.queue = work.catch(() => undefined);
    return work;
  }

  /** Releases by application, as installed.json holds them. */
  installed(): Record<string, InstalledRelease> {
    return this.options.state.readJson<Record<string, InstalledRelease>>("installed.json") ?? {};
  }

  /**
   * After a restart: takes down every project of ours that no release and no deployment in
   * flight accounts for (a crash between a project's up and the record of it), so nothing is
   * left behind. `keep`: applications with a deployment the state machine is still working on.
   * Ours: made from a compose file in this state directory; another agent's projects on the
   * same engine (a second state directory) are left alone.
   */
  async removeLeftovers(keepApplications: ReadonlySet<string>): Promise<string[]> {
    const known = new Set(Object.values(this.installed()).flatMap((r) => r.projects.map((p) => p.name)));
    const releases = this.options.state.path("releases") + "/";
    const leftovers: string[] = [];
    for (const name of await this.options.engine.projects(PROJECT_PREFIX)) {
      if (known.has(name) || [...keepApplications].some((app) => name.startsWith(projectName(app, "")))) continue;
      const containers = await this.options.engine.containers(name);
      if (containers.some((c) => c.workingDir?.startsWith(releases))) leftovers.push(name);
    }
    for (const name of leftovers) {
      this.options.log("warn", `removing leftover project ${name} (no release accounts for it)`);
      await this.options.engine.down({ name });
    }
    return leftovers;
  }

  private async run(entry: LocalDeployment, step: Step): Promise<StepOutcome> {
    this.options.log("info", `${entry.applicationId} ${entry.version}: ${step} (deployment ${entry.deploymentId})`);
    try {
      if (step === "download") await this.download(entry);
      else if (step === "install") return await this.install(entry);
      else await this.remove(entry);
      return { ok: true };
    } catch (error) {
      return { ok: false, message: `${step} failed: ${(error as Error).message}` };
    }
  }

  /** The compose components: a system-image component is the OS updater's (install()). */
  private composeComponents(entry: LocalDeployment): Component[] {
    return this.components(entry).filter((c) => c.properties?.type !== "system-image");
  }

  private components(entry: LocalDeployment): Component[] {
    const profile = entry.desired?.profile;
    if (!profile) throw new Error("the desired state names no deployment profile");
    const type = profile.type === "helm.v3" ? "helm" : profile.type;
    if (type === "helm") throw new Error("helm profiles need a Kubernetes runtime, and this agent runs compose profiles only (choose the application's compose profile)");
    if (type !== "compose") throw new Error(`profile type ${profile.type} is not one this agent can run (compose)`);
    const components = Array.isArray(profile.components) ? (profile.components as Component[]) : [];
    if (!components.length) throw new Error("the deployment profile has no component");
    return components;
  }

  private releaseDir(entry: LocalDeployment, component: string): string {
    return this.options.state.path("releases", entry.deploymentId, revisionDir(entry), component);
  }

  private projectsOf(entry: LocalDeployment): Array<{ name: string; dir: string }> {
    return this.composeComponents(entry).map((c) => ({ name: projectName(entry.applicationId, c.name), dir: this.releaseDir(entry, c.name) }));
  }

  private async download(entry: LocalDeployment): Promise<void> {
    // a system image is the OS updater's: its bundle is downloaded here (resumable), installed in the install step
    const image = this.components(entry).find((c) => c.properties?.type === "system-image");
    if (image && !entry.desired?.systemImage) throw new Error(`component ${image.name} is a system image (a RAUC bundle), and the service handed it without its bundle (systemImage): the service is older than this agent (docs/os-updates.md)`);
    if (image && !this.options.systemImages) throw new Error(`component ${image.name} is a system image (a RAUC bundle), and this agent runs without an OS updater`);
    // the bundle ahead of the install (a window's download-only phase): the install step finds it there
    if (image) await this.options.systemImages!.download(entry.desired!.systemImage!);
    const components = this.composeComponents(entry);
    const parameters = (entry.desired?.parameters ?? {}) as Record<string, Record<string, unknown>>;
    // component by component, its images pulled right after its package came: a pull grant is
    // used within minutes of its issue, however long the other components' pulls take
    for (const component of components) {
      const res = await this.options.session.componentPackage(entry.deploymentId, component.name);
      if (!succeeded(res)) throw new Error(`the service answered ${res.status} for the package of ${component.name}: ${(res.body as { message?: string } | undefined)?.message ?? "no message"}`);
      const digest = `sha256:${createHash("sha256").update(res.body.content, "utf8").digest("hex")}`;
      if (digest !== res.body.digest) throw new Error(`the package of ${component.name} does not match its digest (${res.body.digest})`);
      const values = parameters[component.name] ?? {};
      const rendered = renderComposeFile(res.body.content, values);
      const grant = res.body.pullGrant;
      // the organization's private images named at the service's registry proxy, tag or digest as written
      const proxied = grant ? this.proxiedImages(rendered.compose, envParameters(values), grant) : { compose: rendered.compose, renamed: [] };
      const dir = this.releaseDir(entry, component.name);
      const relative = dir.slice(this.options.state.dir.length + 1);
      // 0600 like the .env: parameters (secrets among them) are written into the services' environment
      this.options.state.writeText(`${relative}/compose.yaml`, proxied.compose, 0o600);
      this.options.state.writeText(`${relative}/.env`, rendered.env, 0o600);
      if (grant) await this.pullWithGrant(composeImages(proxied.compose, envParameters(values)), new Set(proxied.renamed), grant);
      else await this.options.engine.pull({ name: projectName(entry.applicationId, component.name), dir });
    }
  }

  /**
   * The compose file with each image of the grant's repositories named at the service's registry
   * proxy: `private.example/team/app:2.1` is written `<service host>/<registry id>/team/app:2.1`,
   * `...@sha256:<digest>` keeps its digest (and drops a tag beside it, which Podman refuses). The
   * engine then pulls and runs the image under that name, by digest where the file pins one, and
   * checks that digest itself; compose finds it locally at `up` under the name its file says.
   */
  private proxiedImages(compose: string, env: Record<string, string>, grant: PullGrant) {
    const proxyHost = new URL(this.options.serviceUrl).host;
    return renameImages(compose, env, (image) => {
      const { repository, suffix } = splitImage(image);
      const granted = grant.repositories.find((r) => r.repository === repository);
      return granted ? `${proxyHost}/${granted.proxy}${suffix}` : null;
    });
  }

  /**
   * Pulls a project's images one by one: those named at the service's registry proxy with the
   * grant (written to pull-auth/config.json, 0600, for the pull only), the others from their
   * registries directly, with the engine's own configuration.
   */
  private async pullWithGrant(images: string[], proxied: ReadonlySet<string>, grant: PullGrant): Promise<void> {
    const proxyHost = new URL(this.options.serviceUrl).host;
    const authDir = this.options.state.path(PULL_AUTH_DIR);
    const auth = Buffer.from(`${grant.username}:${grant.token}`).toString("base64");
    this.options.state.writeJson(`${PULL_AUTH_DIR}/config.json`, { auths: { [proxyHost]: { auth } } });
    try {
      for (const image of images) await this.options.engine.pullImage(image, proxied.has(image) ? { authDir } : undefined);
    } finally {
      this.options.state.remove(PULL_AUTH_DIR);
    }
  }

  private async up(projects: Array<{ name: string; dir: string }>, timeouts: number[]): Promise<void> {
    for (const [i, project] of projects.entries()) {
      await this.options.engine.down({ name: project.name }); // whatever a crash left under this name
      await this.options.engine.up(project);
      await waitUntilRunning(this.options.engine, project.name, timeouts[i], { pollMs: this.options.pollMs });
    }
  }

  private async install(entry: LocalDeployment): Promise<StepOutcome> {
    // the system first: the application runs on the system it needs, after its committed boot
    const image = entry.desired?.systemImage;
    if (image) {
      if (!this.options.systemImages) throw new Error(`component ${image.component} is a system image, and this agent runs without an OS updater`);
      // the component's timeout is the time the new system has to pass its health checks
      const timeoutMs = parseGoDuration(this.components(entry).find((c) => c.name === image.component)?.properties?.timeout);
      await this.options.systemImages.install(image, {
        deploymentId: entry.deploymentId, attempt: entry.attempt, ...(timeoutMs ? { healthSeconds: Math.ceil(timeoutMs / 1000) } : {}),
      });
    }
    const installed = this.installed();
    const previous = installed[entry.applicationId];
    const components = this.composeComponents(entry);
    const projects = this.projectsOf(entry);
    for (const project of projects) {
      if (!fs.existsSync(`${project.dir}/compose.yaml`)) throw new Error(`the release of ${project.name} is not downloaded (${project.dir}); it is downloaded again on the next attempt`);
    }
    // The release this one replaces: another deployment's, or an earlier revision of this one
    // (an upgrade in place). Its components go down, those the new release no longer has too;
    // its files stay until the new release runs. The same release again (an install begun
    // again after a crash) replaces nothing.
    const replaced = previous && !sameRelease(previous.projects, projects) ? previous : null;
    if (replaced) {
      for (const project of replaced.projects) await this.options.engine.down({ name: project.name });
    }
    try {
      await this.up(projects, components.map((c) => parseGoDuration(c.properties?.timeout) ?? DEFAULT_TIMEOUT_MS));
    } catch (error) {
      const reason = (error as Error).message;
      for (const project of projects) await this.options.engine.down({ name: project.name }).catch(() => undefined);
      if (!replaced) return { ok: false, message: `install failed: ${reason}` };
      try {
        await this.up(replaced.projects, replaced.projects.map(() => DEFAULT_TIMEOUT_MS));
        this.options.log("warn", `${entry.applicationId} ${entry.version} failed; ${replaced.version} runs again`);
        return {
          ok: false, message: `install failed: ${reason}; rolled back on the device: ${entry.applicationId} ${replaced.version} runs again`,
          rolledBackTo: { deploymentId: replaced.deploymentId, version: replaced.version },
        };
      } catch (rollbackError) {
        return { ok: false, message: `install failed: ${reason}; and the previous version ${replaced.version} did not start again: ${(rollbackError as Error).message}` };
      }
    }
    installed[entry.applicationId] = { deploymentId: entry.deploymentId, version: entry.version, projects };
    this.options.state.writeJson("installed.json", installed);
    // Only now the files of the release it replaced go, and those of this deployment's other
    // revisions (earlier ones, failed ones).
    if (replaced && replaced.deploymentId !== entry.deploymentId) this.options.state.remove(`releases/${replaced.deploymentId}`);
    const current = revisionDir(entry);
    // a deployment of a system image alone has no release files
    const releases = this.options.state.path("releases", entry.deploymentId);
    for (const name of fs.existsSync(releases) ? fs.readdirSync(releases) : []) {
      if (name !== current) this.options.state.remove(`releases/${entry.deploymentId}/${name}`);
    }
    this.options.log("info", `${entry.applicationId} ${entry.version} runs`);
    return { ok: true };
  }

  private async remove(entry: LocalDeployment): Promise<void> {
    const installed = this.installed();
    const release = installed[entry.applicationId];
    // By name, whatever the release record says: a removal after a crash still finds them.
    const names = new Set([...(release?.projects.map((p) => p.name) ?? []), ...(await this.options.engine.projects(projectName(entry.applicationId, "")))]);
    // volumes go only for the components whose manifest (the removed version's) asks it
    const profileComponents = (entry.desired?.profile as { components?: unknown } | undefined)?.components;
    const withVolumes = new Set((Array.isArray(profileComponents) ? (profileComponents as Component[]) : [])
      .filter((c) => c.properties?.removeVolumes === true).map((c) => projectName(entry.applicationId, c.name)));
    for (const name of names) await this.options.engine.down({ name }, { volumes: withVolumes.has(name) });
    if (release) {
      delete installed[entry.applicationId];
      this.options.state.writeJson("installed.json", installed);
      this.options.state.remove(`releases/${release.deploymentId}`);
    }
    this.options.state.remove(`releases/${entry.deploymentId}`);
    this.options.log("info", `${entry.applicationId} removed`);
  }
}
