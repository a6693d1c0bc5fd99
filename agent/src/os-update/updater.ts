// The OS update's state machine on the device (docs/os-updates.md), kept in the state directory
// (`os-update.json`, written atomically at every change) so that a restart, a kill -9 or the
// reboot itself carries it on:
//
//   downloading ─▶ installing ─▶ rebooting ─▶ trial ─▶ updated
//        │              │            │          │
//        ▼              ▼            ▼          ▼ (health checks not passed in time: mark-bad)
//      failed         failed     rolled-back  falling-back ─▶ rolled-back
//
// * downloading: the bundle into os-update/ (resumable, its sha256 checked: download.ts).
// * installing: `rauc install`; RAUC checks the signature against the device's keyring and the
//   compatible, and refuses with its reason (failed: nothing changed, the booted system stays).
//   Begun again after a restart; RAUC's service may still be busy with the first call (the
//   client was killed, not the service): asked again until it is free.
// * rebooting: RAUC made the new slot the bootloader's primary, on trial; the agent runs the
//   reboot command and remembers the boot id it asked in. After the boot, the booted slot
//   decides: the new one (trial), or the old one (rolled back: the new system did not come up and
//   the bootloader fell back).
// * trial: the health checks run until they pass (mark-good: updated) or the stated time is up
//   (mark-bad, reboot: falling-back), measured from the first boot into the new slot, a restart
//   of the agent in between included.
// * rolled-back is reported with its reason, never as updated: the state that counts is the
//   slot the bootloader booted, read from RAUC after the boot, not what the agent asked for.
import fs from "node:fs";
import path from "node:path";
import { DownloadError, downloadResumable } from "./download.js";
import { Rauc, RaucError, type RaucStatus } from "./rauc.js";
import type { StateDir } from "../state-dir.js";
import type { SystemReport } from "../core/session.js";

export type OsUpdatePhase = "downloading" | "installing" | "rebooting" | "trial" | "falling-back" | "updated" | "rolled-back" | "failed";
const FINAL: ReadonlySet<OsUpdatePhase> = new Set(["updated", "rolled-back", "failed"]);

/** What is to be installed: a RAUC bundle by HTTP(S) URL and its sha256. */
export interface OsUpdateTarget {
  url: string;
  /** hex sha256 of the bundle file */
  sha256: string;
  /** the version the operator calls it (for the report; RAUC's manifest version is what the slot reports) */
  version?: string;
  /** how long the new system has to pass its health checks after its first boot; default 300 s */
  healthSeconds?: number;
  /** the URL is the service's (an oci:// bundle relayed by it): the download carries the device's token */
  serviceAuth?: boolean;
  /** given by a deployment (docs/os-updates.md): which one and its attempt, so that a retry begins the update again */
  deploymentId?: string;
  attempt?: number;
}

export interface OsUpdateState {
  target: OsUpdateTarget;
  phase: OsUpdatePhase;
  /** when the phase was entered */
  since: string;
  /** when the update began (absent in a state written before this field) */
  startedAt?: string;
  /** the slot that ran when the update began (bootname), and the slot RAUC installed into */
  fromSlot?: string;
  toSlot?: string;
  /** the boot id the reboot was asked in */
  rebootAskedIn?: string;
  /** trial: when the health checks must have passed */
  healthDeadline?: string;
  /** failed, rolled-back, falling-back: why; updated: what runs */
  reason?: string;
  /** the checks that did not pass at the deadline (falling-back, rolled-back) */
  failedChecks?: string[];
}

/** One health check of the new system: null when it passes, else what is wrong. */
export type HealthCheck = () => Promise<string | null>;

export interface OsUpdaterOptions {
  state: StateDir;
  rauc?: Rauc;
  /** runs the system's reboot (the same command as a reboot action's) */
  reboot: () => Promise<void>;
  /** this boot's id (FLEET_AGENT_BOOT_ID_FILE, else the kernel's) */
  bootId: () => Promise<string>;
  log: (level: "info" | "warn" | "error", message: string) => void;
  /** the headers of a download from the service (its device token), asked for each request */
  serviceHeaders?: () => Promise<Record<string, string>>;
  /** told when the phase changed (a heartbeat carries the new facts at once) */
  changed?: () => void;
}

const STATE_FILE = "os-update.json";
const REQUEST_FILE = "os-update-request.json";
const BUNDLE_DIR = "os-update";
/** by slot bootname: the bundle (its sha256:<hex>) and version the agent installed into it */
const SLOTS_FILE = "os-slots.json";

/** Hands the running agent an update (`fleet-agent os-update`): it takes the request at its next look. */
export function requestOsUpdate(state: StateDir, target: OsUpdateTarget): void {
  state.writeJson(REQUEST_FILE, target);
}

/** What is wrong with a target, or null. */
export function targetProblem(target: Partial<OsUpdateTarget>): string | null {
  if (typeof target.url !== "string" || !/^https?:\/\//.test(target.url)) return "url: an http:// or https:// URL of the bundle";
  try {
    new URL(target.url);
  } catch {
    return `url: ${target.url} is not a URL`;
  }
  if (typeof target.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(target.sha256)) return "sha256: the bundle's sha256, 64 hex digits";
  if (target.healthSeconds !== undefined && !(Number.isInteger(target.healthSeconds) && target.healthSeconds > 0)) return "healthSeconds: a whole number of seconds above 0";
  return null;
}

export class OsUpdater {
  private current: OsUpdateState | null;
  /** RAUC's last answer; null: none yet (no RAUC, or busy since the agent started) */
  private system: RaucStatus | null = null;
  /** whether this machine has RAUC: unknown until it answered or was found missing */
  private raucPresent: boolean | null = null;
  private readonly rauc: Rauc;
  private busy = false;

  constructor(private readonly options: OsUpdaterOptions) {
    this.rauc = options.rauc ?? new Rauc();
    this.current = options.state.readJson<OsUpdateState>(STATE_FILE);
  }

  get update(): OsUpdateState | null {
    return this.current;
  }

  /** An update runs (not finished one way or the other). */
  inProgress(): boolean {
    return this.current !== null && !FINAL.has(this.current.phase);
  }

  /**
   * Reads RAUC's view of the system, and carries on an update after a restart or a reboot.
   * Call once at start, before the first heartbeat (its facts say what booted).
   */
  async start(): Promise<void> {
    await this.readSystem();
    if (this.system) await this.resume();
  }

  /** whether resume() ran in this run of the agent (it needs RAUC's answer: which slot booted) */
  private resumed = false;

  private async resume(): Promise<void> {
    this.resumed = true;
    const update = this.current;
    if (!update || FINAL.has(update.phase) || !this.system) return;
    const booted = this.system.booted;
    const bootId = await this.options.bootId();
    const rebooted = update.rebootAskedIn !== undefined && update.rebootAskedIn !== bootId;
    if (update.phase === "rebooting" && rebooted) {
      if (booted === update.toSlot) {
        const deadline = new Date(Date.now() + (update.target.healthSeconds ?? 300) * 1000).toISOString();
        this.enter("trial", { healthDeadline: deadline, reason: undefined });
        this.options.log("info", `booted the new system in slot ${booted} on trial: the health checks have until ${deadline}`);
      } else {
        this.enter("rolled-back", { reason: `the new system in slot ${update.toSlot} did not come up: the bootloader booted slot ${booted} again` });
      }
    } else if (update.phase === "trial" && booted !== update.toSlot) {
      this.enter("rolled-back", { reason: `the bootloader fell back to slot ${booted} before the new system in slot ${update.toSlot} passed its health checks` });
    } else if (update.phase === "falling-back" && rebooted) {
      if (booted === update.fromSlot) this.enter("rolled-back", { reason: update.reason });
      else this.enter("failed", { reason: `${update.reason}; slot ${update.toSlot} was marked bad, but the bootloader booted slot ${booted}` });
    }
  }

  /** Takes a request `fleet-agent os-update` left, unless an update runs (then it waits). */
  private takeRequest(): void {
    const { state } = this.options;
    const target = state.readJson<OsUpdateTarget>(REQUEST_FILE);
    if (!target || this.inProgress()) return;
    state.remove(REQUEST_FILE);
    const problem = targetProblem(target);
    if (problem) {
      this.options.log("error", `the OS update request is refused: ${problem}`);
      return;
    }
    this.begin(target);
  }

  /** Begins an update (ignored while one runs). */
  begin(target: OsUpdateTarget): void {
    if (this.inProgress()) return;
    const now = new Date().toISOString();
    this.current = { target, phase: "downloading", since: now, startedAt: now };
    this.save();
    this.options.log("info", `OS update${target.version ? ` to ${target.version}` : ""}: downloading ${target.url}`);
  }

  /**
   * One step of the update as far as it can go now; `health` are the checks a trial boot must pass.
   * Never two at a time: a call while one runs returns at once.
   */
  async tick(health: Record<string, HealthCheck>): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      this.takeRequest();
      if (!this.current || FINAL.has(this.current.phase)) return await this.markBootGood(health);
      if (!this.system) {
        const answer = await this.readSystem();
        if (answer === "busy") {
          // an install of ours that a killed agent began is still running in RAUC's service
          this.options.log("info", "OS update: RAUC is busy with an install; waiting for it");
          return;
        }
        if (!answer) {
          this.enter("failed", { reason: "this device has no RAUC (rauc status does not answer): an OS update needs RAUC, its system config and service" });
          return;
        }
      }
      if (!this.resumed) await this.resume();
      if (FINAL.has(this.current.phase)) return;
      switch (this.current.phase) {
        case "downloading": return await this.download();
        case "installing": return await this.install();
        case "rebooting":
        case "falling-back": return await this.rebootIfSameBoot();
        case "trial": return await this.judge(health);
      }
    } finally {
      this.busy = false;
    }
  }

  /** Asks RAUC for the slots; keeps the answer (the facts report it). */
  private async readSystem(): Promise<RaucStatus | null | "busy"> {
    const answer = await this.rauc.status();
    if (answer === "busy") {
      this.raucPresent = true;
      return answer;
    }
    this.raucPresent = answer !== null;
    if (answer) this.system = answer;
    return answer;
  }

  private bundleFile(sha256 = this.current!.target.sha256): string {
    return this.options.state.path(BUNDLE_DIR, `${sha256}.raucb`);
  }

  /** bundles being downloaded now (by sha256): one download per file at a time */
  private readonly fetching = new Set<string>();
  /**
   * bundles whose bytes this run checked against their digest: the install after a download
   * ahead of it does not hash the file again (44 s for 251 MB in an emulated guest). After a
   * restart a bundle is hashed once more: the file may have changed meanwhile.
   */
  private readonly verified = new Set<string>();

  /** Downloads a bundle into os-update/, keeping only its own files there (a device has room for one). */
  private async fetchBundle(target: OsUpdateTarget): Promise<void> {
    fs.mkdirSync(this.options.state.path(BUNDLE_DIR), { recursive: true, mode: 0o700 });
    for (const name of fs.readdirSync(this.options.state.path(BUNDLE_DIR))) {
      if (!name.startsWith(target.sha256)) fs.rmSync(path.join(this.options.state.path(BUNDLE_DIR), name), { force: true });
    }
    if (this.verified.has(target.sha256) && fs.existsSync(this.bundleFile(target.sha256))) return;
    this.fetching.add(target.sha256);
    try {
      await downloadResumable(target.url, this.bundleFile(target.sha256), target.sha256, {
        headers: target.serviceAuth ? this.options.serviceHeaders : undefined,
        onResume: (offset) => this.options.log("info", `OS update: the download goes on from ${offset} bytes`),
      });
      this.verified.add(target.sha256);
    } finally {
      this.fetching.delete(target.sha256);
    }
  }

  /**
   * Downloads a bundle ahead of its update (a maintenance window's download-only phase): the
   * update that begins later finds it there. Not while another update runs (its bundle stays).
   * A broken connection is no failure (the update's own download goes on from the part).
   */
  async prefetch(target: OsUpdateTarget): Promise<void> {
    if (this.inProgress() || this.fetching.has(target.sha256)) return;
    try {
      await this.fetchBundle(target);
      this.options.log("info", `OS update${target.version ? ` to ${target.version}` : ""}: the bundle is downloaded ahead of the install (sha256:${target.sha256})`);
    } catch (error) {
      if (error instanceof DownloadError && error.retryable) {
        this.options.log("warn", `OS update: ${error.message}`);
        return;
      }
      throw error;
    }
  }

  private async download(): Promise<void> {
    const { target } = this.current!;
    if (this.fetching.has(target.sha256)) return; // a download ahead of the install is on it: the next tick looks again
    try {
      await this.fetchBundle(target);
    } catch (error) {
      if (error instanceof DownloadError && error.retryable) {
        this.options.log("warn", `OS update: ${error.message}`);
        return;
      }
      this.enter("failed", { reason: (error as Error).message });
      return;
    }
    this.options.log("info", `OS update: the bundle is here (sha256:${target.sha256}); installing it into the inactive slot`);
    this.enter("installing", { fromSlot: this.system!.booted });
  }

  private async install(): Promise<void> {
    try {
      await this.rauc.install(this.bundleFile());
    } catch (error) {
      if (error instanceof RaucError && error.busy) {
        this.options.log("info", `OS update: RAUC is still busy with an install (${error.message}); asking again`);
        return;
      }
      this.enter("failed", { reason: `RAUC refused the bundle: ${(error as Error).message}` });
      fs.rmSync(this.bundleFile(), { force: true });
      return;
    }
    await this.readSystem();
    const primary = this.system!.slots.find((slot) => slot.name === this.system!.bootPrimary);
    const toSlot = primary?.bootname ?? undefined;
    if (!toSlot || toSlot === this.current!.fromSlot) {
      this.enter("failed", { reason: `RAUC installed the bundle but the bootloader's next slot is ${toSlot ?? "unknown"}, not the other slot` });
      return;
    }
    fs.rmSync(this.bundleFile(), { force: true });
    // which bundle is in which slot: RAUC's slot status has the image's digest, not the bundle's
    // (the component's digest the service compares with)
    this.options.state.writeJson(SLOTS_FILE, { ...this.slotBundles(), [toSlot]: { digest: `sha256:${this.current!.target.sha256}`, version: this.current!.target.version ?? null } });
    this.enter("rebooting", { toSlot, rebootAskedIn: await this.options.bootId() });
    await this.reboot(`installed into slot ${toSlot}`);
  }

  private async rebootIfSameBoot(): Promise<void> {
    // asked already and still in the same boot: the reboot command is run again (the agent was
    // restarted before the reboot happened)
    if (this.current!.rebootAskedIn === (await this.options.bootId()) && !this.rebootAsked) {
      await this.reboot(this.current!.phase === "falling-back" ? "falling back" : "booting the new system");
    }
  }

  private rebootAsked = false;

  private async reboot(why: string): Promise<void> {
    this.rebootAsked = true;
    this.options.log("info", `OS update: ${why}; rebooting`);
    try {
      await this.options.reboot();
    } catch (error) {
      this.rebootAsked = false;
      this.options.log("error", `OS update: the reboot command failed (${(error as Error).message}); asking again`);
    }
  }

  /** the booted slot was marked good in this run of the agent (after a routine boot's checks, or an update's trial) */
  private bootMarked = false;

  /**
   * Once per boot, with no update under way: the booted slot is marked good once the device's
   * own checks pass (`device`: health.d), as RAUC's rauc-mark-good.service or greenboot do. A
   * bootloader that counts attempts (RAUC's GRUB scheme sets the slot's TRY flag at every boot)
   * otherwise takes the second ordinary reboot for a failed boot and starts the other slot. The
   * service and the applications are not asked here: a device off the network, or an application
   * that is down, must not send the next reboot to an older system. Not for a slot a finished
   * update marked bad and the bootloader booted anyway (that is the operator's to judge).
   */
  private async markBootGood(health: Record<string, HealthCheck>): Promise<void> {
    if (this.bootMarked || !this.system || !this.system.booted) return;
    const update = this.current;
    if (update && update.phase !== "updated" && update.toSlot === this.system.booted) return;
    const problem = health.device ? await health.device().catch((error: Error) => error.message) : null;
    if (problem) return; // asked again at the next step
    try {
      await this.rauc.mark("good");
      this.bootMarked = true;
      this.options.log("info", `OS update: slot ${this.system.booted} booted and passed the device's checks; marked good`);
    } catch (error) {
      this.options.log("warn", `OS update: slot ${this.system.booted} could not be marked good (${(error as Error).message}); asking again`);
    }
  }

  private async judge(health: Record<string, HealthCheck>): Promise<void> {
    const update = this.current!;
    const failing: string[] = [];
    for (const [name, check] of Object.entries(health)) {
      const problem = await check().catch((error: Error) => error.message);
      if (problem) failing.push(`${name}: ${problem}`);
    }
    if (!failing.length) {
      await this.rauc.mark("good");
      this.bootMarked = true;
      await this.readSystem();
      const slot = this.system?.slots.find((s) => s.bootname === update.toSlot);
      this.enter("updated", { reason: `slot ${update.toSlot} runs ${slot?.version ?? update.target.version ?? "the new system"} and passed its health checks; marked good` });
      this.options.log("info", `OS update: ${this.current!.reason}`);
      return;
    }
    if (Date.now() < Date.parse(update.healthDeadline!)) return;
    const reason = `the new system in slot ${update.toSlot} did not pass its health checks within ${update.target.healthSeconds ?? 300} s (${failing.join("; ")}); marked bad, the bootloader falls back to slot ${update.fromSlot}`;
    this.options.log("error", `OS update: ${reason}`);
    await this.rauc.mark("bad");
    this.enter("falling-back", { reason, failedChecks: failing, rebootAskedIn: await this.options.bootId() });
    await this.reboot("falling back");
  }

  private enter(phase: OsUpdatePhase, fields: Partial<OsUpdateState>): void {
    this.current = { ...this.current!, ...fields, phase, since: new Date().toISOString() };
    if (phase !== "rebooting" && phase !== "falling-back") this.rebootAsked = false;
    this.save();
    if (phase === "failed" || phase === "rolled-back") this.options.log("error", `OS update ${phase}: ${this.current.reason}`);
    this.options.changed?.();
  }

  private save(): void {
    this.options.state.writeJson(STATE_FILE, this.current);
  }

  private slotBundles(): Record<string, { digest: string; version: string | null }> {
    return this.options.state.readJson<Record<string, { digest: string; version: string | null }>>(SLOTS_FILE) ?? {};
  }

  /** The bundle digest (sha256:<hex>) the agent installed into the booted slot; null: unknown (not installed by this agent). */
  bootedDigest(): string | null {
    return this.system ? this.slotBundles()[this.system.booted]?.digest ?? null : null;
  }

  /**
   * The heartbeat's `system` (docs/agent.md): the booted slot and the other one (RAUC's version
   * and image digest, the bundle digest the agent installed there), and the last finished update
   * with its outcome. Null without RAUC's answer.
   */
  systemReport(): SystemReport | null {
    const system = this.system;
    // the service refuses a malformed report with the whole heartbeat: nothing doubtful is sent
    if (!system || !system.booted.trim()) return null;
    const bundles = this.slotBundles();
    const booted = system.slots.find((s) => s.bootname === system.booted);
    const other = system.slots.find((s) => s.bootname && s.bootname !== system.booted && s.name.split(".")[0] === booted?.name.split(".")[0]);
    const sha = (hex: string | null | undefined) => (hex && /^[0-9a-f]{64}$/.test(hex) ? `sha256:${hex}` : null);
    const text = (value: string | null | undefined, max = 256) => value?.trim().slice(0, max) || null;
    const update = this.current;
    const outcome = update?.phase === "updated" ? "committed" : update?.phase === "rolled-back" || update?.phase === "failed" ? update.phase : null;
    return {
      bootedSlot: system.booted.trim().slice(0, 100),
      booted: { version: text(booted?.version), digest: bundles[system.booted]?.digest ?? null, imageDigest: sha(booted?.imageSha256) },
      other: other?.bootname?.trim() ? { slot: other.bootname.trim().slice(0, 100), version: text(other.version), digest: bundles[other.bootname]?.digest ?? null, imageDigest: sha(other.imageSha256) } : null,
      lastUpdate: update && outcome ? {
        digest: `sha256:${update.target.sha256}`, toVersion: text(update.target.version),
        fromVersion: text(system.slots.find((s) => s.bootname === update.fromSlot)?.version),
        fromSlot: text(update.fromSlot, 100), toSlot: text(update.toSlot, 100), outcome, reason: update.reason?.slice(0, 2000) ?? null,
        startedAt: update.startedAt ?? update.since, finishedAt: update.since,
      } : null,
    };
  }

  /**
   * What the heartbeat's facts say: whether RAUC is here, the compatible, the slots and which one
   * is booted, the booted system's version and image digest, and the update's phase and reason.
   */
  facts(): Record<string, string | number | boolean | null> {
    const system = this.system;
    const facts: Record<string, string | number | boolean | null> = this.raucPresent === null ? {} : { "rauc": this.raucPresent };
    if (system) {
      const booted = system.slots.find((s) => s.bootname === system.booted);
      const other = system.slots.find((s) => s.bootname && s.bootname !== system.booted && s.name.split(".")[0] === booted?.name.split(".")[0]);
      Object.assign(facts, {
        "rauc.compatible": system.compatible,
        "rauc.bootedSlot": system.booted,
        "rauc.slots": system.slots.map((s) => `${s.name}=${s.bootname ?? "-"}:${s.state}:${s.bootStatus ?? "?"}${s.version ? `:${s.version}` : ""}`).join(" ").slice(0, 1000),
        "rauc.booted.version": booted?.version ?? null,
        "rauc.booted.imageSha256": booted?.imageSha256 ?? null,
        "rauc.other.version": other?.version ?? null,
        "rauc.other.imageSha256": other?.imageSha256 ?? null,
      });
    }
    const update = this.current;
    if (update) {
      Object.assign(facts, {
        "osUpdate.phase": update.phase,
        "osUpdate.version": update.target.version ?? null,
        "osUpdate.bundleSha256": update.target.sha256,
        "osUpdate.since": update.since,
        "osUpdate.reason": update.reason?.slice(0, 1000) ?? null,
      });
    }
    return facts;
  }
}
