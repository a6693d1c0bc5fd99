// Admission control for work that must not pile up in memory: at most `concurrency` pieces of
// work at once, at most `queueLength` waiting for a turn (first come, first served), none
// waiting longer than `queueTimeoutMs`. Whatever does not fit is refused at once, and the
// caller answers "busy, come back later" (src/http/ingest-admission.ts: 503 with Retry-After).
//
// Why a counter and not p-limit or p-queue (neither is a dependency): both queue without bound
// and without a deadline, so a refusal (queue full, waited too long) and a waiter that leaves
// (its client hung up) would have to be built around them anyway; what is left of them is
// this counter and a FIFO array.

export interface AdmissionLimits {
  /** pieces of work admitted at once */
  concurrency: number;
  /** callers waiting for a turn at most; 0 = refuse as soon as all turns are taken */
  queueLength: number;
  /** a caller that has waited this long is refused (the work in front of it is not finishing) */
  queueTimeoutMs: number;
}

/** Why a caller was not admitted: every turn taken and the queue full, or it waited too long. */
export type RefusalReason = "queue-full" | "queue-timeout";

export type Admission =
  | { admitted: true; /** gives the turn back (to the next waiter); idempotent */ release: () => void }
  | { admitted: false; reason: RefusalReason | "abandoned" };

interface Waiter {
  admit: () => void;
}

export class AdmissionGate {
  private active = 0;
  private readonly waiting: Waiter[] = [];

  constructor(readonly limits: AdmissionLimits) {}

  /** work admitted and not released yet */
  get inFlight(): number {
    return this.active;
  }

  /** callers waiting for a turn */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Takes a turn: at once when one is free, else after waiting in the queue. Resolves with the
   * refusal when the queue is full (at once) or the wait exceeds the timeout; "abandoned" when
   * `signal` aborts while waiting (the caller left; its place goes to the next one).
   */
  enter(signal?: AbortSignal): Promise<Admission> {
    if (signal?.aborted) return Promise.resolve({ admitted: false, reason: "abandoned" });
    if (this.active < this.limits.concurrency) return Promise.resolve(this.admit());
    if (this.waiting.length >= this.limits.queueLength) return Promise.resolve({ admitted: false, reason: "queue-full" });
    return new Promise((resolve) => {
      const leave = (reason: RefusalReason | "abandoned") => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        settle();
        resolve({ admitted: false, reason });
      };
      const onAbort = () => leave("abandoned");
      const timer = setTimeout(() => leave("queue-timeout"), this.limits.queueTimeoutMs);
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const waiter: Waiter = {
        admit: () => {
          settle();
          resolve(this.admit());
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private admit(): Admission {
    this.active++;
    let released = false;
    return {
      admitted: true,
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        // The turn goes straight to the oldest waiter (counted again by its admit()).
        this.waiting.shift()?.admit();
      },
    };
  }
}

/**
 * Seconds to answer in Retry-After: `baseSeconds` plus up to as much again at random, so a
 * fleet refused in the same second does not come back in the same second.
 */
export function retryAfterWithJitter(baseSeconds: number, random: () => number = Math.random): number {
  return baseSeconds + Math.floor(random() * (baseSeconds + 1));
}
