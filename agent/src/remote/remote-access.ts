// The agent's remote access (docs/remote-access.md, "Device side"): how it learns that a session
// waits, and what it does with each offer.
//
// * Wake-up: while the heartbeat answers remoteAccess.enabled (the organization's policy for
//   this device) and the device's own configuration allows it, one long-poll
//   GET /api/v1/agent/remote/wait is held (device token; the service holds it up to 50 s and
//   answers at once when a session is opened). A failure is retried with exponential back-off
//   and full jitter (1 s doubling to 60 s, times 0.5-1), so a fleet that lost the service does
//   not come back in one wave. The heartbeat's remoteAccess.pending is the fallback.
// * Each offer is served once (by sessionId, and connectionId for port forwarding), whichever
//   path brought it; expired offers are dropped.
// * Refused offers (a switch says no, a path outside the roots, a target not allowed) are
//   answered POST /api/v1/agent/remote-sessions/{id}/refuse { reason }; the others join the
//   device leg and are served until the stream ends.
// * Stopping the agent ends every session; kill -9 of the agent is handled by the sessions'
//   watchdogs and, at the next start, the registry (processes.ts).
import { JsonClient } from "../core/json-client.js";
import type { StateDir } from "../state-dir.js";
import type { RemoteAccessConfig } from "./config.js";
import { prepareOffer } from "./kinds.js";
import { DeviceLeg } from "./leg.js";
import { offerKey, type Offer, type SessionContext } from "./offer.js";
import { SessionProcesses } from "./processes.js";

export interface RemoteAccessAnswer {
  enabled?: boolean;
  pending?: Offer[];
}

export interface RemoteAccessOptions {
  serviceUrl: string;
  /** the device token, `Bearer ...` */
  authorization: () => Promise<string>;
  config: RemoteAccessConfig;
  /** where the session registry is kept (null: none, in tests) */
  state: StateDir | null;
  log: (level: "info" | "warn" | "error", message: string) => void;
  /** back-off bounds, for tests; default 1 s and 60 s */
  backoffMs?: { min: number; max: number };
}

const WAIT_PATH = "/api/v1/agent/remote/wait";
/** longer than the service holds a wait (50 s) */
const WAIT_TIMEOUT_MS = 75_000;
/** how long an offer's key is remembered past its expiry */
const SEEN_MS = 10 * 60_000;

export class RemoteAccess {
  private client: JsonClient;
  private allowedByService = false;
  private stopped = false;
  private polling: Promise<void> | null = null;
  private wakeSleep: (() => void) | null = null;
  private readonly seen = new Map<string, number>();
  private readonly running = new Map<string, { legs: Set<DeviceLeg>; enders: Set<() => Promise<void> | void>; done: Promise<void> }>();
  readonly processes: SessionProcesses;
  private readonly ctx: SessionContext;
  /** offers handled so far (status, tests) */
  handled = 0;

  constructor(private readonly options: RemoteAccessOptions) {
    this.client = new JsonClient(options.serviceUrl, 8, WAIT_TIMEOUT_MS);
    this.processes = new SessionProcesses(options.state);
    this.ctx = { config: options.config, processes: this.processes, log: options.log };
  }

  /** Before the first heartbeat: what a previous run's sessions left is killed. */
  async start(): Promise<void> {
    const killed = await this.processes.killLeftovers();
    if (killed) this.options.log("warn", `stopped ${killed} process(es) of remote sessions a previous run of the agent left`);
  }

  /** What a heartbeat answered about remote access. */
  onHeartbeat(answer: RemoteAccessAnswer | undefined) {
    if (this.stopped) return;
    this.allowedByService = answer?.enabled === true;
    for (const offer of answer?.pending ?? []) void this.handle(offer);
    if (this.allowedByService && this.options.config.enabled) {
      this.polling ??= this.pollLoop().finally(() => (this.polling = null));
    } else if (this.polling) {
      this.interruptPoll();
    }
  }

  /** Serves one offer (at most once, however often it is offered). */
  async handle(offer: Offer): Promise<void> {
    if (this.stopped || !offer || typeof offer.sessionId !== "string") return;
    const now = Date.now();
    for (const [key, until] of this.seen) if (until < now) this.seen.delete(key);
    const key = offerKey(offer);
    if (this.seen.has(key)) return;
    const expiresAt = offer.expiresAt ? Date.parse(offer.expiresAt) : NaN;
    this.seen.set(key, (Number.isFinite(expiresAt) ? Math.max(expiresAt, now) : now) + SEEN_MS);
    if (Number.isFinite(expiresAt) && expiresAt < now) {
      this.options.log("warn", `remote session ${offer.sessionId}: its offer expired at ${offer.expiresAt} before it reached the device`);
      return;
    }
    this.handled++;
    const entry = { legs: new Set<DeviceLeg>(), enders: new Set<() => Promise<void> | void>(), done: Promise.resolve() };
    let finish!: () => void;
    entry.done = new Promise((resolve) => (finish = resolve));
    this.running.set(key, entry);
    try {
      const prepared = prepareOffer(offer, this.ctx, (end) => {
        entry.enders.add(end);
        return () => entry.enders.delete(end);
      });
      if ("refuse" in prepared) {
        this.options.log("info", `remote session ${offer.sessionId} (${offer.kind}) refused: ${prepared.refuse}`);
        await this.refuse(offer.sessionId, prepared.refuse);
        return;
      }
      const leg = await DeviceLeg.open(this.streamUrl(offer), await this.options.authorization());
      entry.legs.add(leg);
      if (this.stopped) leg.close(1001, "agent stopping");
      if (offer.kind !== "port-forward") this.options.log("info", `remote session ${offer.sessionId} (${offer.kind}) started${offer.reason ? `: ${offer.reason}` : ""}`);
      await prepared.run(leg);
      if (offer.kind !== "port-forward") this.options.log("info", `remote session ${offer.sessionId} (${offer.kind}) ended`);
    } catch (error) {
      this.options.log("warn", `remote session ${offer.sessionId} (${offer.kind}): ${(error as Error).message}`);
    } finally {
      this.running.delete(key);
      finish();
    }
  }

  /** Ends every session (their processes and streams) and the long-poll. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.interruptPoll();
    const sessions = [...this.running.values()];
    await Promise.all(sessions.flatMap((session) => [...session.enders].map(async (end) => end())));
    for (const session of sessions) for (const leg of session.legs) leg.close(1001, "agent stopping");
    await Promise.all(sessions.map((session) => session.done));
    await this.polling;
    this.client.close();
  }

  /** Sessions being served now. */
  get active(): number {
    return this.running.size;
  }

  private streamUrl(offer: Offer): string {
    const url = new URL(`/api/v1/agent/remote-sessions/${encodeURIComponent(offer.sessionId)}/stream`, this.options.serviceUrl);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("token", offer.token);
    if (offer.connectionId) url.searchParams.set("connectionId", offer.connectionId);
    return url.toString();
  }

  private async refuse(sessionId: string, reason: string): Promise<void> {
    try {
      const res = await this.client.request("POST", `/api/v1/agent/remote-sessions/${encodeURIComponent(sessionId)}/refuse`, { reason: reason.slice(0, 500) }, { authorization: await this.options.authorization() });
      if (res.status >= 300) this.options.log("warn", `remote session ${sessionId}: the refusal was answered ${res.status}`);
    } catch (error) {
      this.options.log("warn", `remote session ${sessionId}: the refusal could not be sent (${(error as Error).message})`);
    }
  }

  private get shouldPoll(): boolean {
    return !this.stopped && this.allowedByService && this.options.config.enabled;
  }

  private async pollLoop(): Promise<void> {
    const { min, max } = this.options.backoffMs ?? { min: 1000, max: 60_000 };
    let failures = 0;
    while (this.shouldPoll) {
      let waitMs = 0;
      try {
        const res = await this.client.request<{ enabled?: boolean; offers?: Offer[] }>("GET", WAIT_PATH, undefined, { authorization: await this.options.authorization() });
        if (res.status === 200) {
          failures = 0;
          // the organization turned it off since the last heartbeat: wait for the heartbeat's word
          if (res.body?.enabled === false) this.allowedByService = false;
          for (const offer of res.body?.offers ?? []) void this.handle(offer);
        } else if (res.status !== 204) {
          failures++;
          const retryAfter = Number(res.headers["retry-after"]);
          waitMs = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : backoff(failures, min, max);
          // a refusal of the device (401/403) is the heartbeat's to act on; the route missing (404) or
          // remote access turned off (409) waits for the next heartbeat's word
          if (res.status === 404 || res.status === 409) this.allowedByService = false;
        }
      } catch {
        if (!this.shouldPoll) break;
        failures++;
        waitMs = backoff(failures, min, max);
      }
      if (waitMs > 0 && this.shouldPoll) await this.sleep(waitMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleep = done;
    });
  }

  /** Ends a held wait and a back-off sleep at once (disabled, stopping). */
  private interruptPoll() {
    this.wakeSleep?.();
    this.client.close();
    this.client = new JsonClient(this.options.serviceUrl, 8, WAIT_TIMEOUT_MS);
  }
}

/** Exponential back-off with jitter: min * 2^(failures-1), at most max, times 0.5-1. */
export function backoff(failures: number, min: number, max: number): number {
  const ceiling = Math.min(max, min * 2 ** Math.min(failures - 1, 30));
  return Math.round(ceiling * (0.5 + Math.random() * 0.5));
}
