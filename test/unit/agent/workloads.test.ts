// The real agent's deployment runtime (agent/src/workloads.ts) under the shared state machine,
// against a fake container engine and a fake service: every failure path, device-side
// rollback, removal after a crash, leftovers, and carrying on after a restart.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DeploymentAgent, type DesiredDeploymentEntry } from "../../../agent/src/core/deployments.js";
import type { DeviceSession } from "../../../agent/src/core/session.js";
import type { ComposeEngine, ComposeProject, DownOptions, ProjectContainer, PullAuth } from "../../../agent/src/runtime/engine.js";
import { StateDir } from "../../../agent/src/state-dir.js";
import { ComposeRuntime, parseGoDuration, projectName, revisionDir } from "../../../agent/src/workloads.js";
import { systemImageInstaller, type SystemUpdater } from "../../../agent/src/os-update/deployment-hand-over.js";
import type { OsUpdateState, OsUpdateTarget } from "../../../agent/src/os-update/updater.js";

const APP = "11111111-1111-4111-8111-111111111111";
const compose = (tag: string) => `services:\n  web:\n    image: registry.test/web:${tag}\n`;
const digestOf = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

/** A container engine in memory: projects come up running unless told to fail. */
class FakeEngine implements ComposeEngine {
  readonly kind = "podman" as const;
  running = new Map<string, { dir: string; image: string; state: string; exitCode: number | null }>();
  failPull = new Set<string>(); // image tags whose pull fails
  exitOnUp = new Set<string>(); // image tags whose container exits at once
  calls: string[] = [];
  async version() {
    return "podman 4.3.1";
  }
  /** the first service's image, ${NAME} taken from the release's .env as compose does */
  private image(dir: string) {
    const envFile = path.join(dir, ".env");
    const env = Object.fromEntries((fs.existsSync(envFile) ? fs.readFileSync(envFile, "utf8") : "").split("\n").filter(Boolean).map((l) => l.split("=", 2)));
    return /image: (\S+)/.exec(fs.readFileSync(path.join(dir, "compose.yaml"), "utf8"))![1].replace(/\$\{(\w+)[^}]*\}/g, (_, name: string) => env[name] ?? "");
  }
  async pull(project: ComposeProject) {
    const image = this.image(project.dir);
    this.calls.push(`pull ${image}`);
    if ([...this.failPull].some((t) => image.endsWith(t))) throw new Error(`initializing source docker://${image}: manifest unknown`);
  }
  /** per pullImage call: what it pulled, and the credential file as it was during the pull */
  pulledImages: Array<{ image: string; auth?: { mode: number; json: unknown } }> = [];
  async pullImage(image: string, auth?: PullAuth) {
    this.calls.push(`pullImage ${image}`);
    const file = auth && path.join(auth.authDir, "config.json");
    this.pulledImages.push({ image, auth: file ? { mode: fs.statSync(file).mode & 0o777, json: JSON.parse(fs.readFileSync(file, "utf8")) } : undefined });
    if ([...this.failPull].some((t) => image.endsWith(t))) throw new Error(`initializing source docker://${image}: manifest unknown`);
  }
  async up(project: ComposeProject) {
    const image = this.image(project.dir);
    this.calls.push(`up ${project.name} ${image}`);
    const exits = [...this.exitOnUp].some((t) => image.endsWith(t));
    this.running.set(project.name, { dir: project.dir, image, state: exits ? "exited" : "running", exitCode: exits ? 3 : null });
  }
  async down(project: { name: string }, options: DownOptions = {}) {
    if (this.running.delete(project.name)) this.calls.push(`down ${project.name}${options.volumes ? " with volumes" : ""}`);
  }
  async containers(name: string): Promise<ProjectContainer[]> {
    const p = this.running.get(name);
    return p ? [{ id: `${name}-1`, name: `${name}_web_1`, service: "web", state: p.state, health: null, exitCode: p.exitCode, workingDir: p.dir }] : [];
  }
  async containersOf(names: readonly string[]) {
    return (await Promise.all(names.map((n) => this.containers(n)))).flat();
  }
  async logFile() {
    return null;
  }
  async projects(prefix: string) {
    return [...this.running.keys()].filter((n) => n.startsWith(prefix));
  }
  async logs() {
    return [{ timestamp: new Date().toISOString(), stream: "stderr" as const, message: "missing configuration" }];
  }
  async runHealthCheck() {}
}

/** The service's package procedure (agent.componentPackage): the compose file per version, or a refusal. */
function fakeSession(packages: Record<string, { status: number; content?: string; digest?: string; pullGrant?: unknown }>): DeviceSession {
  return {
    componentPackage: async (id: string) => {
      const p = packages[id] ?? { status: 404 };
      if (p.status !== 200) return { status: p.status, body: { message: "Deployment not found" }, headers: {} };
      return { status: 200, body: { content: p.content, digest: p.digest ?? digestOf(p.content!), pullGrant: p.pullGrant ?? null }, headers: {} };
    },
  } as unknown as DeviceSession;
}

let dir: string;
let state: StateDir;
let engine: FakeEngine;
const logs: string[] = [];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "workloads-"));
  state = new StateDir(dir);
  state.ensure();
  engine = new FakeEngine();
  logs.length = 0;
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function setup(packages: Record<string, { status: number; content?: string; digest?: string; pullGrant?: unknown }>, updater?: FakeUpdater) {
  let settled = 0;
  const log = (level: string, message: string) => logs.push(`${level}: ${message}`);
  const runtime = new ComposeRuntime({
    engine, session: fakeSession(packages), state, pollMs: 5, serviceUrl: "https://fleet.test:8443", onSettled: () => settled++, log,
    ...(updater ? { systemImages: systemImageInstaller({ updater: () => updater, serviceUrl: "https://fleet.test:8443", log, pollMs: 5 }) } : {}),
  });
  if (updater) updater.engine = engine;
  const agent = new DeploymentAgent({ runtime });
  /** lets queued steps settle, then takes them */
  const settle = async () => {
    for (let i = 0; i < 200 && agent.list().some((d) => ["downloading", "installing", "removing"].includes(d.state)); i++) {
      await new Promise((r) => setTimeout(r, 10));
      agent.advance();
    }
    agent.advance();
  };
  return { runtime, agent, settle, settledCount: () => settled };
}

function desired(deploymentId: string, version: string, extra: Partial<DesiredDeploymentEntry> = {}): DesiredDeploymentEntry {
  return {
    deploymentId, action: "install", attempt: 1, window: "open", applicationId: APP, version,
    profile: { id: "compose", type: "compose", components: [{ name: "web", properties: { repository: "oci://r/web", revision: version, timeout: "2s" } }] },
    parameters: { web: { GREETING: "hi" } }, ...extra,
  };
}

const PROJECT = projectName(APP, "web");

const BUNDLE = "https://files.example/os-2.0.0.raucb";
const DIGEST = `sha256:${"9d".repeat(32)}`;

/** A version with a system image (component os) as the service hands it (desired systemImage). */
function withSystemImage(entry: DesiredDeploymentEntry): DesiredDeploymentEntry {
  (entry.profile!.components as unknown[]).push({ name: "os", properties: { type: "system-image", repository: BUNDLE, revision: "2.0.0", digest: DIGEST } });
  return { ...entry, systemImage: { component: "os", url: BUNDLE, repository: BUNDLE, digest: DIGEST, version: "2.0.0" } };
}

/**
 * The OS updater (agent/src/os-update/updater.ts) as the hand-over sees it: begin() starts an
 * update that ends, a little later, in `outcome` with `reason` (the real one's download, RAUC,
 * reboot and trial are test/agent/os-update/rauc.test.ts's). Records the phase the update was in
 * whenever the engine brought a project up.
 */
class FakeUpdater implements SystemUpdater {
  update: OsUpdateState | null = null;
  begun: OsUpdateTarget[] = [];
  booted: string | null = null;
  upWhilePhase: string[] = [];
  constructor(private readonly outcome: "updated" | "rolled-back" | "failed", private readonly reason: string) {}
  set engine(engine: FakeEngine) {
    const up = engine.up.bind(engine);
    engine.up = async (project) => {
      this.upWhilePhase.push(this.update?.phase ?? "none");
      return up(project);
    };
  }
  inProgress() {
    return this.update !== null && !["updated", "rolled-back", "failed"].includes(this.update.phase);
  }
  /** bundles fetched ahead of their install (the download step) */
  prefetched: OsUpdateTarget[] = [];
  async prefetch(target: OsUpdateTarget) {
    this.prefetched.push(target);
  }
  begin(target: OsUpdateTarget) {
    this.begun.push(target);
    const now = new Date().toISOString();
    this.update = { target, phase: "downloading", since: now, startedAt: now };
    setTimeout(() => (this.update = { ...this.update!, phase: "trial" }), 10);
    setTimeout(() => (this.update = { ...this.update!, phase: this.outcome, reason: this.reason }), 30);
  }
  bootedDigest() {
    return this.booted;
  }
}
/** a file of a revision's release: releases/<deploymentId>/<revision>/web/<file> */
const releaseFile = (entry: DesiredDeploymentEntry, file: string) => path.join(dir, "releases", entry.deploymentId, revisionDir({ version: entry.version, desired: entry }), "web", file);

describe("compose deployments on the engine", () => {
  it("installs: fetches the package, renders the parameters, pulls, brings it up, records the release", async () => {
    const { agent, settle, runtime } = setup({ d1: { status: 200, content: compose("1") } });
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    expect(agent.get("d1")?.state).toBe("running");
    expect(engine.calls).toEqual(["pull registry.test/web:1", `up ${PROJECT} registry.test/web:1`]);
    const written = fs.readFileSync(releaseFile(desired("d1", "1.0.0"), "compose.yaml"), "utf8");
    expect(written).toContain('GREETING: "hi"');
    expect(fs.readFileSync(releaseFile(desired("d1", "1.0.0"), ".env"), "utf8")).toBe("GREETING=hi\n");
    expect(runtime.installed()[APP]).toMatchObject({ deploymentId: "d1", version: "1.0.0", projects: [{ name: PROJECT }] });
  });

  const GRANT = {
    username: "fleet-pull-grant", token: "grant-token", expiresAt: new Date(Date.now() + 60_000).toISOString(),
    repositories: [{ repository: "private.test:5000/team/web", proxy: "0b0e6f5e-5c1a-4c55-9e43-0f1b2f3a4b5c/team/web" }],
  };
  const GRANT_AUTH = { mode: 0o600, json: { auths: { "fleet.test:8443": { auth: Buffer.from("fleet-pull-grant:grant-token").toString("base64") } } } };

  it("a pull grant: the private images are named at the service's registry proxy and pulled from it with the grant, the others directly; the credential file is gone after", async () => {
    const content = "services:\n  web:\n    # the application's own image\n    image: Private.test:5000/team/web:${TAG:-1}\n  cache:\n    image: public.test/cache:7\n";
    const { agent, settle } = setup({ d1: { status: 200, content, pullGrant: GRANT } });
    agent.apply([desired("d1", "1.0.0", { parameters: { web: { TAG: "2.1" } } })]);
    await settle();
    expect(agent.get("d1")?.state).toBe("running");
    const proxied = "fleet.test:8443/0b0e6f5e-5c1a-4c55-9e43-0f1b2f3a4b5c/team/web:2.1";
    expect(engine.pulledImages).toEqual([{ image: proxied, auth: GRANT_AUTH }, { image: "public.test/cache:7", auth: undefined }]);
    // the release's file names the proxy's image (compose finds it locally at `up`), the rest as it was
    const written = fs.readFileSync(releaseFile(desired("d1", "1.0.0", { parameters: { web: { TAG: "2.1" } } }), "compose.yaml"), "utf8");
    expect(written).toContain(`image: ${proxied}\n`);
    expect(written).toContain("# the application's own image");
    expect(written).toContain("image: public.test/cache:7");
    expect(engine.calls).toContain(`up ${PROJECT} ${proxied}`);
    // no compose pull (it would ask the private registry itself), and the grant is not kept
    expect(engine.calls.filter((c) => c.startsWith("pull "))).toEqual([]);
    expect(fs.existsSync(path.join(dir, "pull-auth"))).toBe(false);
  });

  it("a private image pinned by digest is pulled from the proxy by that digest (a tag beside it dropped), and runs under it", async () => {
    const digest = `sha256:${"ab".repeat(32)}`;
    const content = `services:\n  web:\n    image: private.test:5000/team/web:1.4@${digest}\n  worker:\n    image: private.test:5000/team/web@${digest}\n`;
    const { agent, settle } = setup({ d1: { status: 200, content, pullGrant: GRANT } });
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    expect(agent.get("d1")?.state).toBe("running");
    const proxied = `fleet.test:8443/0b0e6f5e-5c1a-4c55-9e43-0f1b2f3a4b5c/team/web@${digest}`;
    // one image, once: both services name the same digest
    expect(engine.pulledImages).toEqual([{ image: proxied, auth: GRANT_AUTH }]);
    const written = fs.readFileSync(releaseFile(desired("d1", "1.0.0"), "compose.yaml"), "utf8");
    expect(written.match(/image: (\S+)/g)).toEqual([`image: ${proxied}`, `image: ${proxied}`]);
    expect(engine.calls).toContain(`up ${PROJECT} ${proxied}`);
  });

  it("a grant's pull refused by the proxy fails the download with the engine's words, and nothing starts", async () => {
    engine.failPull.add("/team/web:1");
    const content = "services:\n  web:\n    image: private.test:5000/team/web:1\n";
    const { agent, settle } = setup({ d1: { status: 200, content, pullGrant: GRANT } });
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    expect(agent.get("d1")).toMatchObject({ state: "failed", message: expect.stringMatching(/^download failed: .*fleet\.test:8443\/0b0e6f5e-5c1a-4c55-9e43-0f1b2f3a4b5c\/team\/web:1: manifest unknown$/) });
    expect(engine.running.size).toBe(0);
    expect(fs.existsSync(path.join(dir, "pull-auth"))).toBe(false);
  });

  it("a version with a system image hands it to the OS updater first, and brings the compose project up only after the committed boot", async () => {
    const updater = new FakeUpdater("updated", "slot B runs 2.0.0 and passed its health checks; marked good");
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") } }, updater);
    agent.apply([withSystemImage(desired("d1", "1.0.0"))]);
    await settle();
    // the bundle was fetched in the download step, then the update begun in the install step
    expect(updater.prefetched).toEqual([{ url: BUNDLE, sha256: "9d".repeat(32), version: "2.0.0" }]);
    expect(updater.begun).toEqual([{ url: BUNDLE, sha256: "9d".repeat(32), version: "2.0.0", deploymentId: "d1", attempt: 1 }]);
    expect(agent.get("d1")).toMatchObject({ state: "running" });
    // the project came up after the update was committed, never before
    expect(updater.upWhilePhase).toEqual(["updated"]);
    expect(engine.running.get(PROJECT)?.state).toBe("running");
  });

  it("a system update that rolled back fails the install with the updater's reason and starts nothing", async () => {
    const reason = "the new system in slot B did not pass its health checks within 300 s (service: no heartbeat was answered since the boot); marked bad, the bootloader falls back to slot A";
    const updater = new FakeUpdater("rolled-back", reason);
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") } }, updater);
    agent.apply([withSystemImage(desired("d1", "1.0.0"))]);
    await settle();
    expect(agent.get("d1")).toMatchObject({ state: "failed", message: `install failed: system update 2.0.0 rolled back: ${reason}` });
    expect(engine.running.size).toBe(0);
  });

  it("a system image the device runs already is neither fetched nor installed again", async () => {
    const updater = new FakeUpdater("updated", "");
    updater.booted = DIGEST;
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") } }, updater);
    agent.apply([withSystemImage(desired("d1", "1.0.0"))]);
    await settle();
    expect(updater.prefetched).toEqual([]);
    expect(updater.begun).toEqual([]);
    expect(agent.get("d1")).toMatchObject({ state: "running" });
  });

  it("an oci:// system image is fetched from the service's relay with the device's token; one handed with no way to fetch it fails naming why", async () => {
    const updater = new FakeUpdater("updated", "slot B runs 2.0.0");
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") }, d2: { status: 200, content: compose("2") } }, updater);
    const oci = withSystemImage(desired("d1", "1.0.0"));
    oci.systemImage = { ...oci.systemImage!, url: null, repository: "oci://registry.example/os/gateway", bundlePath: "/api/v1/agent/deployments/d1/components/os/bundle" };
    agent.apply([oci]);
    await settle();
    const relayed = { url: "https://fleet.test:8443/api/v1/agent/deployments/d1/components/os/bundle", sha256: "9d".repeat(32), version: "2.0.0", serviceAuth: true };
    expect(updater.prefetched).toEqual([relayed]);
    expect(updater.begun).toEqual([{ ...relayed, deploymentId: "d1", attempt: 1 }]);
    expect(agent.get("d1")).toMatchObject({ state: "running" });

    const unreachable = withSystemImage(desired("d2", "2.0.0", { applicationId: "other" }));
    unreachable.systemImage = { ...unreachable.systemImage!, url: null, repository: "oci://registry.example/os/gateway" };
    agent.apply([unreachable]);
    await settle();
    expect(agent.get("d2")).toMatchObject({
      state: "failed",
      message: "download failed: component os: the service handed no way to fetch the bundle oci://registry.example/os/gateway (neither an https:// URL nor its relay of an oci:// bundle): the service is older than this agent",
    });
  });

  it("a window's download-only phase fetches the bundle and begins no update; the component's timeout is the new system's time for its health checks", async () => {
    const updater = new FakeUpdater("updated", "slot B runs 2.0.0");
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") } }, updater);
    const entry = withSystemImage(desired("d1", "1.0.0", { window: "download-only" }));
    (entry.profile!.components as Array<{ name: string; properties: Record<string, unknown> }>).find((c) => c.name === "os")!.properties.timeout = "2m30s";
    agent.apply([entry]);
    await settle();
    expect(updater.prefetched).toHaveLength(1);
    expect(updater.begun).toEqual([]);
    expect(agent.get("d1")?.state).toBe("downloading");
    expect(engine.running.size).toBe(0);
    agent.apply([{ ...entry, window: "open" }]);
    await settle();
    expect(updater.prefetched).toHaveLength(1);
    expect(updater.begun).toEqual([expect.objectContaining({ deploymentId: "d1", healthSeconds: 150 })]);
    expect(agent.get("d1")?.state).toBe("running");
  });

  it("a system image handed without its bundle (an older service) fails the download and starts nothing", async () => {
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") } }, new FakeUpdater("updated", ""));
    const entry = withSystemImage(desired("d1", "1.0.0"));
    delete entry.systemImage;
    agent.apply([entry]);
    await settle();
    expect(agent.get("d1")?.message).toBe("download failed: component os is a system image (a RAUC bundle), and the service handed it without its bundle (systemImage): the service is older than this agent (docs/os-updates.md)");
    expect(engine.running.size).toBe(0);
  });

  it("a package the service refuses, or that does not match its digest, fails the download and starts nothing", async () => {
    const { agent, settle } = setup({ d2: { status: 200, content: compose("2"), digest: "sha256:" + "0".repeat(64) } });
    agent.apply([desired("d1", "1.0.0"), desired("d2", "2.0.0", { applicationId: "other" })]);
    await settle();
    expect(agent.get("d1")).toMatchObject({ state: "failed", message: "download failed: the service answered 404 for the package of web: Deployment not found" });
    expect(agent.get("d2")?.message).toMatch(/^download failed: the package of web does not match its digest/);
    expect(engine.running.size).toBe(0);
  });

  it("an image that cannot be pulled fails the download with the engine's words", async () => {
    engine.failPull.add(":1");
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") } });
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    expect(agent.get("d1")?.message).toBe("download failed: initializing source docker://registry.test/web:1: manifest unknown");
    expect(engine.running.size).toBe(0);
  });

  it("a compose file that is not one fails the download naming why", async () => {
    const { agent, settle } = setup({ d1: { status: 200, content: "just: [text" } });
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    expect(agent.get("d1")?.message).toMatch(/^download failed: the compose file is not valid YAML/);
  });

  it("a helm profile fails at once with a clear message", async () => {
    const { agent, settle } = setup({});
    agent.apply([desired("d1", "1.0.0", { profile: { id: "helm", type: "helm.v3", components: [{ name: "web" }] } })]);
    await settle();
    expect(agent.get("d1")?.message).toMatch(/helm profiles need a Kubernetes runtime/);
  });

  it("a first install whose container exits fails with the exit code and the log, and leaves nothing running", async () => {
    engine.exitOnUp.add(":1");
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") } });
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    expect(agent.get("d1")?.message).toMatch(/^install failed: container .* exited with code 3: missing configuration$/);
    expect(engine.running.size).toBe(0);
  });

  it("an upgrade whose container exits brings the previous release back up and says so", async () => {
    engine.exitOnUp.add(":3");
    const { agent, settle, runtime } = setup({ d1: { status: 200, content: compose("1") }, d3: { status: 200, content: compose("3") } });
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    agent.apply([desired("d3", "3.0.0")]);
    await settle();
    expect(agent.get("d3")?.message).toMatch(/exited with code 3.*; rolled back on the device: .* 1\.0\.0 runs again$/);
    expect(engine.running.get(PROJECT)).toMatchObject({ image: "registry.test/web:1", state: "running" });
    expect(runtime.installed()[APP].deploymentId).toBe("d1");
    // the report says what runs instead
    expect(agent.pendingReports().find((r) => r.deploymentId === "d3")).toMatchObject({ state: "failed", rolledBackTo: { deploymentId: "d1", version: "1.0.0" } });
  });

  it("an upgrade in place (a new revision under the same deployment) whose container exits brings the previous revision back up from its own files", async () => {
    engine.exitOnUp.add(":3");
    const packages = { d1: { status: 200, content: compose("1") } };
    const { agent, settle, runtime } = setup(packages);
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    expect(agent.get("d1")?.state).toBe("running");
    // the service now answers the new revision's package under the same deployment
    packages.d1 = { status: 200, content: compose("3") };
    agent.apply([desired("d1", "3.0.0")]);
    await settle();
    expect(agent.get("d1")).toMatchObject({ version: "3.0.0", state: "failed" });
    expect(agent.get("d1")?.message).toMatch(/exited with code 3.*; rolled back on the device: .* 1\.0\.0 runs again$/);
    expect(engine.running.get(PROJECT)).toMatchObject({ image: "registry.test/web:1", state: "running" });
    expect(runtime.installed()[APP]).toMatchObject({ deploymentId: "d1", version: "1.0.0" });
    // both revisions' files are there: the one that runs, and the failed one (downloaded beside it)
    expect(fs.readFileSync(releaseFile(desired("d1", "1.0.0"), "compose.yaml"), "utf8")).toContain("web:1");
    expect(fs.readFileSync(releaseFile(desired("d1", "3.0.0"), "compose.yaml"), "utf8")).toContain("web:3");
    expect(agent.pendingReports()).toEqual([expect.objectContaining({ deploymentId: "d1", state: "failed", rolledBackTo: { deploymentId: "d1", version: "1.0.0" } })]);

    // a later revision that runs replaces it, and the other revisions' files go
    packages.d1 = { status: 200, content: compose("2") };
    agent.apply([desired("d1", "2.0.0")]);
    await settle();
    expect(agent.get("d1")).toMatchObject({ version: "2.0.0", state: "running" });
    expect(agent.get("d1")?.rolledBackTo).toBeUndefined();
    expect(engine.running.get(PROJECT)).toMatchObject({ image: "registry.test/web:2", state: "running" });
    expect(fs.readdirSync(path.join(dir, "releases/d1"))).toEqual([revisionDir({ version: "2.0.0", desired: desired("d1", "2.0.0") })]);
  });

  it("an upgrade in place that changes only a parameter is a revision of its own: a failure rolls back to the previous values", async () => {
    const { agent, settle } = setup({ d1: { status: 200, content: "services:\n  web:\n    image: registry.test/web:${TAG}\n" } });
    agent.apply([desired("d1", "1.0.0", { parameters: { web: { TAG: "1" } } })]);
    await settle();
    engine.exitOnUp.add(":bad");
    agent.apply([desired("d1", "1.0.0", { parameters: { web: { TAG: "bad" } } })]);
    await settle();
    expect(agent.get("d1")?.message).toMatch(/rolled back on the device: .* 1\.0\.0 runs again$/);
    expect(engine.running.get(PROJECT)).toMatchObject({ image: "registry.test/web:1", state: "running" });
  });

  it("a crash between an in-place upgrade's download and its install: after a restart the install rolls back to the previous revision", async () => {
    engine.exitOnUp.add(":3");
    const packages = { d1: { status: 200, content: compose("1") } };
    const first = setup(packages);
    first.agent.apply([desired("d1", "1.0.0")]);
    await first.settle();
    packages.d1 = { status: 200, content: compose("3") };
    // the new revision is downloaded (a maintenance window holds its install back), and the
    // process dies before its install began
    first.agent.apply([desired("d1", "3.0.0", { window: "download-only" })]);
    await first.settle();
    expect(first.agent.get("d1")).toMatchObject({ state: "downloading", downloaded: true });
    expect(engine.running.get(PROJECT)?.image).toBe("registry.test/web:1");
    const crashed = first.agent.snapshot();

    const second = setup(packages);
    second.agent.restore(crashed);
    second.agent.apply([desired("d1", "3.0.0")]);
    await second.settle();
    expect(second.agent.get("d1")?.message).toMatch(/rolled back on the device: .* 1\.0\.0 runs again$/);
    expect(engine.running.get(PROJECT)).toMatchObject({ image: "registry.test/web:1", state: "running" });
  });

  it("an upgrade replaces the release: one project, the old release's files gone", async () => {
    const { agent, settle, runtime } = setup({ d1: { status: 200, content: compose("1") }, d2: { status: 200, content: compose("2") } });
    agent.apply([desired("d1", "1.0.0")]);
    await settle();
    agent.apply([desired("d2", "2.0.0")]);
    await settle();
    expect(agent.get("d2")?.state).toBe("running");
    expect([...engine.running.keys()]).toEqual([PROJECT]);
    expect(engine.running.get(PROJECT)?.image).toBe("registry.test/web:2");
    expect(runtime.installed()[APP].deploymentId).toBe("d2");
    expect(fs.existsSync(path.join(dir, "releases/d1"))).toBe(false);
    expect(fs.readdirSync(path.join(dir, "releases/d2"))).toEqual([revisionDir({ version: "2.0.0", desired: desired("d2", "2.0.0") })]);
  });

  it("a removal takes the project down, also when no release records it (a crash after up)", async () => {
    engine.running.set(PROJECT, { dir: "/gone", image: "x", state: "running", exitCode: null });
    const { agent, settle } = setup({});
    agent.apply([{ ...desired("d9", "1.0.0"), action: "remove" }]);
    await settle();
    expect(agent.get("d9")?.state).toBe("removed");
    expect(engine.running.size).toBe(0);
  });

  it("a removal keeps the volumes unless the removed version's manifest says removeVolumes: true, component by component; an upgrade keeps them", async () => {
    const two = (removeVolumes?: boolean) => ({
      id: "compose", type: "compose",
      components: [
        { name: "web", properties: { repository: "oci://r/web", revision: "1", timeout: "2s", ...(removeVolumes === undefined ? {} : { removeVolumes }) } },
        { name: "db", properties: { repository: "oci://r/db", revision: "1", timeout: "2s" } },
      ],
    });
    const { agent, settle } = setup({ d1: { status: 200, content: compose("1") }, d2: { status: 200, content: compose("2") } });
    agent.apply([desired("d1", "1.0.0", { profile: two(true) })]);
    await settle();
    agent.apply([desired("d2", "2.0.0", { profile: two(true) })]);
    await settle();
    expect(agent.get("d2")?.state).toBe("running");
    expect(engine.calls.filter((c) => c.startsWith("down"))).toEqual([`down ${PROJECT}`, `down ${projectName(APP, "db")}`]);
    engine.calls.length = 0;
    agent.apply([{ ...desired("d2", "2.0.0", { profile: two(true) }), action: "remove" }]);
    await settle();
    expect(agent.get("d2")?.state).toBe("removed");
    expect(engine.calls.sort()).toEqual([`down ${PROJECT} with volumes`, `down ${projectName(APP, "db")}`].sort());

    // the default, and false: volumes stay
    for (const [i, removeVolumes] of [undefined, false].entries()) {
      const id = `d${3 + i}`;
      const run = setup({ [id]: { status: 200, content: compose("3") } });
      run.agent.apply([desired(id, "3.0.0", { profile: two(removeVolumes) })]);
      await run.settle();
      engine.calls.length = 0;
      run.agent.apply([{ ...desired(id, "3.0.0", { profile: two(removeVolumes) }), action: "remove" }]);
      await run.settle();
      expect(run.agent.get(id)?.state).toBe("removed");
      expect(engine.calls.sort(), String(removeVolumes)).toEqual([`down ${projectName(APP, "db")}`, `down ${PROJECT}`].sort());
    }
  });

  it("after a restart, leftovers are taken down and a step under way begins again", async () => {
    const first = setup({ d1: { status: 200, content: compose("1") } });
    first.agent.apply([desired("d1", "1.0.0")]);
    // the process dies after the snapshot said "downloading": nothing ran yet
    const saved = first.agent.snapshot();
    expect(saved[0].state).toBe("downloading");
    engine.running.set("fleet-stranger-web", { dir: path.join(dir, "releases/gone/web"), image: "y", state: "running", exitCode: null });
    // another agent's project on the same engine (its compose file elsewhere) is not ours to remove
    engine.running.set("fleet-neighbour-web", { dir: "/var/lib/other-agent/releases/d/web", image: "z", state: "running", exitCode: null });

    const second = setup({ d1: { status: 200, content: compose("1") } });
    second.agent.restore(saved);
    expect(await second.runtime.removeLeftovers(new Set([APP]))).toEqual(["fleet-stranger-web"]);
    await second.settle();
    expect(second.agent.get("d1")?.state).toBe("running");
    expect([...engine.running.keys()].sort()).toEqual(["fleet-neighbour-web", PROJECT].sort());
  });
});

describe("timeouts", () => {
  it("reads the manifest's durations", () => {
    expect(parseGoDuration("5m0s")).toBe(300_000);
    expect(parseGoDuration("90s")).toBe(90_000);
    expect(parseGoDuration("1h")).toBe(3_600_000);
    expect(parseGoDuration("1h2m3s")).toBe(3_723_000);
    expect(parseGoDuration("soon")).toBeNull();
    expect(parseGoDuration(undefined)).toBeNull();
  });
});
