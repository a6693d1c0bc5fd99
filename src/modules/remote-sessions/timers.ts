// Deadlines of sessions. The process that opened a session ends it `device-never-joined` at
// its join deadline (a timer); the relay of a stream watches idleness and the absolute end of
// the sessions it carries (./relay.ts). Behind both, every process sweeps the table
// periodically (one statement per reason), so a deadline holds when the process that would
// have acted is gone.
import { Prisma } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import { perService } from "../../lib/per-service.js";
import { endSessionsWhere, sweepExpired } from "./lifecycle.js";

export const SWEEP_INTERVAL_MS = 15_000;

export class SessionTimers {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly services: Services) {}

  /** Ends the session device-never-joined at `deadline` unless the device joined by then. */
  watch(sessionId: string, deadline: Date) {
    const delay = Math.max(0, deadline.getTime() - Date.now());
    const timer = setTimeout(() => {
      this.timers.delete(sessionId);
      endSessionsWhere(this.services, Prisma.sql`s."id" = ${sessionId}::uuid AND s."state" = 'pending'`, "device-never-joined", undefined, {
        message: "the device did not join the session in time",
      }).catch((err: Error) => this.services.logger.warn({ err: err.message, sessionId }, "join deadline not applied"));
    }, delay);
    timer.unref();
    this.timers.set(sessionId, timer);
  }

  startSweeping() {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => {
      sweepExpired(this.services).catch((err: Error) => this.services.logger.warn({ err: err.message }, "remote session sweep failed"));
    }, SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }

  close() {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }
}

export const joinTimers = perService((services: Services) => new SessionTimers(services));
