// Device actions on the agent (docs/actions.md): taken from the heartbeat's answer, run at
// most once, reported back with the next heartbeats.
//
// At most once: an action's id is written to actions.json (atomically, in the state
// directory) before anything of it runs, and an id found there is never taken again, whatever
// the service hands over again (its answer lost, a reconnection, a restart of the agent). An
// action that was running when the agent stopped is not begun again: a reboot is judged by
// the boot id (changed: done), a restart of the agent by the run it was asked in, anything else
// is reported failed ("the agent stopped while it ran").
//
// Reboot and restart-agent take the agent down: they are carried out only once the service
// acknowledged their `running` report, so the service knows before the device goes away.
import crypto from "node:crypto";
import { execFile } from "node:child_process";
import fsp from "node:fs/promises";
import { promisify } from "node:util";
import type { StateDir } from "../state-dir.js";
import type { ComposeEngine, ProjectContainer } from "../runtime/engine.js";
import type { ActionSettings } from "./settings.js";
import { leaseHold } from "./leases.js";
import { collectDiagnostics } from "./diagnostics.js";

const run = promisify(execFile);
const FILE = "actions.json";
/** final actions are forgotten this long after their expiry (the service hands none over past it) */
const KEEP_AFTER_EXPIRY_MS = 24 * 3600_000;
const RUNNING_WAIT_MS = 60_000;

/** An action as the heartbeat's answer hands it over (the service's deviceActionEntry). */
export interface ActionEntry {
  id: string;
  kind: string;
  deploymentId: string | null;
  applicationId: string | null;
  expiresAt: string;
}

/** What is reported (the service's actionReport). */
export interface ActionReport {
  id: string;
  state: "running" | "deferred" | "succeeded" | "failed" | "expired";
  message?: string;
  result?: Record<string, unknown>;
  deferredUntil?: string;
  deferredBy?: string;
}

/** taken: written down, nothing of it begun yet; dropped: no longer open at the service while deferred */
type LocalState = ActionReport["state"] | "taken" | "dropped";

interface LocalAction extends ActionEntry {
  state: LocalState;
  message?: string;
  result?: Record<string, unknown>;
  deferredUntil?: string;
  deferredBy?: string;
  /** reboot: the boot it was asked in; restart-agent: the agent's run it was asked in */
  bootId?: string;
  runId?: string;
  /** reboot, restart-agent: carried out once the running report was acknowledged */
  awaitingAck?: boolean;
  rev: number;
  reportedRev: number;
}

const DEFERRABLE = new Set(["reboot", "restart-app", "stop-app", "restart-agent"]);
const FINAL = new Set<LocalState>(["succeeded", "failed", "expired", "dropped"]);

export interface ActionHost {
  state: StateDir;
  settings: ActionSettings;
  engine: ComposeEngine;
  /** the compose projects of each installed application */
  installed(): Record<string, { projects: Array<{ name: string; dir: string }> }>;
  /** runs `task` between deployment steps, never during one */
  exclusive<T>(task: () => Promise<T>): Promise<T>;
  renewCertificate(): Promise<string>;
  uploadBundle(actionId: string, data: Uint8Array): Promise<{ status: number; body: unknown }>;
  status(): unknown;
  recentLines(): string[];
  collectTelemetry(): Promise<void>;
  log(level: "info" | "warn" | "error", message: string): void;
  /** something changed that the service should hear soon */
  wake(): void;
  /** restart-agent: stop, so that the service manager starts the agent again */
  restartAgent(): void;
}

export class ActionRunner {
  private readonly actions = new Map<string, LocalAction>();
  private readonly runId = crypto.randomUUID();
  /** ids being taken now (a lease look or the work itself is in flight) */
  private readonly inFlight = new Set<string>();
  /** per id, the change a report in flight carries */
  private readonly sent = new Map<string, number>();
  private bootId = "";

  constructor(private readonly host: ActionHost) {}

  /** After a start: what a previous run left running is judged, never begun again. */
  async start(): Promise<void> {
    this.bootId = await this.readBootId();
    for (const a of this.host.state.readJson<LocalAction[]>(FILE) ?? []) this.actions.set(a.id, a);
    for (const a of this.actions.values()) {
      if (a.state !== "running") continue;
      if (a.kind === "reboot" && !a.awaitingAck) {
        if (a.bootId && a.bootId !== this.bootId) this.finish(a, "succeeded", `rebooted: boot id ${a.bootId} -> ${this.bootId}`, { bootIdBefore: a.bootId, bootIdAfter: this.bootId });
        else this.finish(a, "failed", "the device did not reboot: the agent started again in the same boot");
      } else if (a.kind === "restart-agent" && !a.awaitingAck) {
        this.finish(a, "succeeded", "the agent restarted");
      } else {
        this.finish(a, "failed", "the agent stopped while it ran; not begun again (at most once)");
      }
    }
    this.save();
  }

  /** Unacknowledged changes, for the next heartbeat. */
  pendingReports(): ActionReport[] {
    const due = [...this.actions.values()].filter((a) => a.rev > a.reportedRev && a.state !== "dropped");
    for (const a of due) this.sent.set(a.id, a.rev);
    return due.map((a) => ({
      id: a.id, state: a.state as ActionReport["state"],
      ...(a.message ? { message: a.message.slice(0, 2000) } : {}),
      ...(a.result ? { result: a.result } : {}),
      ...(a.deferredUntil ? { deferredUntil: a.deferredUntil } : {}),
      ...(a.deferredBy ? { deferredBy: a.deferredBy } : {}),
    }));
  }

  /** The service took these reports (the heartbeat answered 200). */
  acknowledge(reports: ActionReport[]): void {
    for (const r of reports) {
      const a = this.actions.get(r.id);
      // a change made while the heartbeat was out is reported again
      if (a) a.reportedRev = Math.max(a.reportedRev, this.sent.get(r.id) ?? 0);
    }
    this.save();
  }

  /** The open actions the heartbeat answered (none: absent). New ones are taken, once. */
  apply(entries: ActionEntry[]): void {
    const open = new Set(entries.map((e) => e.id));
    for (const a of this.actions.values()) {
      // cancelled or expired at the service while a lease held it
      if (a.state === "deferred" && !open.has(a.id)) this.finish(a, "dropped", "no longer open at the service");
    }
    for (const entry of entries) {
      if (this.actions.has(entry.id)) continue;
      const a: LocalAction = { ...entry, state: "taken", rev: 0, reportedRev: 0 };
      this.actions.set(a.id, a);
      // written before anything of it runs: at most once
      this.save();
      void this.take(a);
    }
  }

  /** After each heartbeat: deferred actions whose leases ended, acknowledged reboots and restarts. */
  tick(): void {
    for (const a of [...this.actions.values()]) {
      // not awaited: the heartbeat loop goes on while an action runs
      // (taken too: by a run that stopped before it began anything)
      if (a.state === "deferred" || a.state === "taken") void this.take(a);
      else if (a.state === "running" && a.awaitingAck && a.reportedRev >= a.rev) void this.carryOut(a);
    }
    this.prune();
  }

  /** Something is running or waits to be reported. */
  busy(): boolean {
    return [...this.actions.values()].some((a) => (a.state === "running" && a.kind !== "reboot") || (a.rev > a.reportedRev && a.state !== "dropped"));
  }

  /** For fleet-agent status. */
  list() {
    return [...this.actions.values()].map((a) => ({ id: a.id, kind: a.kind, state: a.state, message: a.message ?? null, deferredUntil: a.deferredUntil ?? null }));
  }

  private async take(a: LocalAction): Promise<void> {
    if (this.inFlight.has(a.id)) return;
    this.inFlight.add(a.id);
    try {
      await this.takeNow(a);
    } finally {
      this.inFlight.delete(a.id);
    }
  }

  private async takeNow(a: LocalAction): Promise<void> {
    if (Date.now() >= Date.parse(a.expiresAt)) return this.finish(a, "expired", `expired at ${a.expiresAt} before the device ran it`);
    if (DEFERRABLE.has(a.kind)) {
      const hold = await leaseHold(this.host.settings);
      if (hold) {
        const { until, by, reason } = hold;
        if (a.state !== "deferred" || a.deferredUntil !== until || a.deferredBy !== by) {
          this.change(a, { state: "deferred", deferredUntil: until, deferredBy: by, message: `deferred by a lease of ${by} until ${until}${reason ? `: ${reason}` : ""}` });
          this.host.log("info", `${a.kind} (action ${a.id}) deferred by a lease of ${by} until ${until}`);
        }
        return;
      }
    }
    this.change(a, { state: "running", message: undefined, ...(a.kind === "reboot" ? { bootId: this.bootId, awaitingAck: true } : {}), ...(a.kind === "restart-agent" ? { runId: this.runId, awaitingAck: true } : {}) });
    this.host.log("info", `${a.kind} (action ${a.id}) begins`);
    if (a.awaitingAck) return;
    try {
      const { message, result } = await this.execute(a);
      this.finish(a, "succeeded", message, result);
    } catch (error) {
      this.finish(a, "failed", (error as Error).message, (error as { result?: Record<string, unknown> }).result);
    }
  }

  private async carryOut(a: LocalAction): Promise<void> {
    a.awaitingAck = false;
    this.save();
    if (a.kind === "restart-agent") {
      this.host.log("info", `restarting the agent (action ${a.id})`);
      this.host.restartAgent();
      return;
    }
    this.host.log("info", `rebooting the device (action ${a.id}): ${this.host.settings.rebootCommand}`);
    try {
      await run("sh", ["-c", this.host.settings.rebootCommand], { timeout: 120_000 });
      // done once the device is back with another boot id (start())
    } catch (error) {
      const e = error as { stderr?: string; message: string };
      this.finish(a, "failed", `the reboot command failed: ${(e.stderr || e.message).trim().slice(0, 1000)}`);
    }
  }

  private async execute(a: LocalAction): Promise<{ message: string; result?: Record<string, unknown> }> {
    switch (a.kind) {
      case "restart-app":
      case "stop-app":
      case "start-app":
        return this.host.exclusive(() => this.actOnApplication(a));
      case "check-health":
        return this.checkHealth();
      case "renew-certificate":
        return { message: await this.host.renewCertificate() };
      case "diagnostics":
        return this.diagnostics(a);
      default:
        throw new Error(`this agent does not know the action ${a.kind}`);
    }
  }

  private projectsOf(a: LocalAction) {
    const release = a.applicationId ? this.host.installed()[a.applicationId] : undefined;
    if (!release) throw new Error("the application is not installed on this device");
    return release.projects;
  }

  private async actOnApplication(a: LocalAction): Promise<{ message: string; result: Record<string, unknown> }> {
    const projects = this.projectsOf(a);
    const { engine } = this.host;
    const before = await engine.containersOf(projects.map((p) => p.name));
    if (a.kind !== "start-app") for (const p of projects) await engine.down({ name: p.name });
    if (a.kind !== "stop-app") {
      for (const p of projects) await engine.up(p);
      await this.waitRunning(projects.map((p) => p.name));
    }
    const after = await engine.containersOf(projects.map((p) => p.name));
    const names = projects.map((p) => p.name).join(", ");
    const words = { "restart-app": "restarted", "stop-app": "stopped", "start-app": "started" }[a.kind as "restart-app"];
    return {
      message: `${words} ${names}: ${after.filter((c) => c.state === "running").length} container(s) running`,
      result: { before: before.map((c) => ({ id: c.id, service: c.service, state: c.state })), after: after.map((c) => ({ id: c.id, service: c.service, state: c.state })) },
    };
  }

  private async waitRunning(projects: string[]): Promise<void> {
    const deadline = Date.now() + RUNNING_WAIT_MS;
    for (;;) {
      const containers = await this.host.engine.containersOf(projects);
      const bad = containers.find((c) => c.state === "exited" || c.state === "dead");
      if (bad) throw new Error(`container ${bad.name} exited (code ${bad.exitCode ?? "?"})`);
      if (containers.length && containers.every((c) => c.state === "running")) return;
      if (Date.now() > deadline) throw new Error(`the containers of ${projects.join(", ")} did not run within ${RUNNING_WAIT_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  private async checkHealth(): Promise<{ message: string; result: Record<string, unknown> }> {
    const { engine } = this.host;
    const projects = Object.values(this.host.installed()).flatMap((r) => r.projects.map((p) => p.name));
    const first = await engine.containersOf(projects);
    for (const c of first.filter((c) => c.health !== null && c.state === "running")) await engine.runHealthCheck(c.name).catch(() => undefined);
    const containers: ProjectContainer[] = await engine.containersOf(projects);
    await this.host.collectTelemetry().catch(() => undefined);
    const bad = containers.filter((c) => c.state !== "running" || c.health === "unhealthy");
    const result = { containers: containers.map((c) => ({ name: c.name, service: c.service, state: c.state, health: c.health })) };
    if (bad.length) throw Object.assign(new Error(`${bad.length} of ${containers.length} container(s) not healthy: ${bad.map((c) => `${c.name} ${c.health ?? c.state}`).join(", ")}`), { result });
    return { message: `${containers.length} container(s) running${containers.some((c) => c.health) ? ", health checks passed" : ""}`, result };
  }

  private async diagnostics(a: LocalAction): Promise<{ message: string; result: Record<string, unknown> }> {
    const projects = Object.entries(this.host.installed()).flatMap(([applicationId, r]) => r.projects.map((p) => ({ applicationId, name: p.name })));
    const bundle = await collectDiagnostics({ engine: this.host.engine, projects, status: this.host.status(), recentLines: this.host.recentLines() });
    const res = await this.host.uploadBundle(a.id, bundle.data);
    if (res.status !== 201) throw new Error(`the service refused the bundle (${res.status}: ${(res.body as { message?: string })?.message ?? ""})`);
    return {
      message: `bundle of ${bundle.data.length} bytes uploaded: ${bundle.parts.length} parts${bundle.truncated.length ? `, ${bundle.truncated.length} cut to fit` : ""}`,
      result: { parts: bundle.parts, truncated: bundle.truncated },
    };
  }

  private change(a: LocalAction, fields: Partial<LocalAction>): void {
    Object.assign(a, fields);
    a.rev++;
    this.save();
    this.host.wake();
  }

  private finish(a: LocalAction, state: LocalState, message: string, result?: Record<string, unknown>): void {
    this.change(a, { state, message, ...(result ? { result } : {}), awaitingAck: false });
    if (state !== "dropped") this.host.log(state === "failed" ? "warn" : "info", `${a.kind} (action ${a.id}) ${state}: ${message}`);
  }

  private prune(): void {
    const before = this.actions.size;
    for (const [id, a] of this.actions) {
      if (FINAL.has(a.state) && a.reportedRev >= a.rev && Date.parse(a.expiresAt) + KEEP_AFTER_EXPIRY_MS < Date.now()) this.actions.delete(id);
    }
    if (this.actions.size !== before) this.save();
  }

  private save(): void {
    this.host.state.writeJson(FILE, [...this.actions.values()]);
  }

  private async readBootId(): Promise<string> {
    try {
      return (await fsp.readFile(this.host.settings.bootIdFile, "utf8")).trim();
    } catch {
      return "";
    }
  }
}
