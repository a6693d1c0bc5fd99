// What the follow mode keeps: the newest lines (at most FOLLOW_CAP, so that a page left
// following for hours keeps a bounded DOM), and, while paused, the lines that arrived since
// (counted, not shown). A reconnect replays lines already held; they are recognised by their
// id (ids grow with every line a device sends) and skipped. Immutable: React state.
import type { LogLine } from "./logs";

export const FOLLOW_CAP = 2000;

export interface FollowBuffer {
  /** shown, oldest first */
  lines: readonly LogLine[];
  /** arrived while paused, oldest first (the newest FOLLOW_CAP of them) */
  held: readonly LogLine[];
  /** every line that arrived while paused, including those beyond the cap */
  heldCount: number;
  paused: boolean;
  /** lines that left the view because the cap was reached */
  dropped: number;
  /** id of the newest line received: a reconnect resumes after it */
  lastId: string | null;
}

export const emptyFollowBuffer: FollowBuffer = { lines: [], held: [], heldCount: 0, paused: false, dropped: 0, lastId: null };

const newer = (id: string, than: string | null) => than === null || BigInt(id) > BigInt(than);

/** Keeps the newest `cap` lines; answers them and how many were cut. */
function capped(lines: readonly LogLine[], cap: number): [readonly LogLine[], number] {
  return lines.length > cap ? [lines.slice(lines.length - cap), lines.length - cap] : [lines, 0];
}

/** Lines from the stream (oldest first): shown, or held while paused; ones already received are skipped. */
export function receive(buffer: FollowBuffer, incoming: readonly LogLine[], cap = FOLLOW_CAP): FollowBuffer {
  let lastId = buffer.lastId;
  const fresh: LogLine[] = [];
  for (const line of incoming) {
    if (!newer(line.id, lastId)) continue;
    fresh.push(line);
    lastId = line.id;
  }
  if (fresh.length === 0) return buffer;
  if (buffer.paused) {
    const [held] = capped([...buffer.held, ...fresh], cap);
    return { ...buffer, held, heldCount: buffer.heldCount + fresh.length, lastId };
  }
  const [lines, cut] = capped([...buffer.lines, ...fresh], cap);
  return { ...buffer, lines, dropped: buffer.dropped + cut, lastId };
}

export function pause(buffer: FollowBuffer): FollowBuffer {
  return buffer.paused ? buffer : { ...buffer, paused: true };
}

/** Shows what arrived while paused (what the cap let through: the counted lines beyond it are dropped). */
export function resume(buffer: FollowBuffer, cap = FOLLOW_CAP): FollowBuffer {
  if (!buffer.paused) return buffer;
  const [lines, cut] = capped([...buffer.lines, ...buffer.held], cap);
  const neverHeld = buffer.heldCount - buffer.held.length;
  return { ...buffer, lines, held: [], heldCount: 0, paused: false, dropped: buffer.dropped + cut + neverHeld };
}
