// The follow mode behind GET /devices/{id}/logs/stream: after the replay, every batch a
// device sends is announced on the "logs" pub/sub channel (NOTIFY across processes on
// PostgreSQL, in process on PGlite) and each follower of that device fetches the lines after
// the last one it sent. The announcement carries only the device id: a batch of 1,000 lines
// would not fit in a NOTIFY payload, and followers with different filters read what they need.
import type { Services } from "../../services.js";
import { CHANNELS, pubSubOf } from "../realtime/pubsub.js";
import type { LogFilter, LogLineDto } from "./schemas.js";
import { logsAfter } from "./service.js";

const FETCH_LIMIT = 500;

/** Announces new lines of a device (after they committed). */
export async function announceLogs(services: Services, device: { id: string; organizationId: string }) {
  await pubSubOf(services).publish(CHANNELS.logs, { deviceId: device.id, organizationId: device.organizationId });
}

export interface LogFollower {
  /** fetch now, whatever was announced (keep-alive ticks, reconnects) */
  poke(): void;
  stop(): void;
}

export function followLogs(
  services: Services,
  deviceId: string,
  filter: Omit<LogFilter, "from" | "to">,
  startAfter: bigint,
  send: (lines: LogLineDto[]) => void,
): LogFollower {
  const pubsub = pubSubOf(services);
  let cursor = startAfter;
  let running = false;
  let again = false;
  let stopped = false;

  // One fetch at a time; announcements during a fetch make it run once more afterwards.
  const fetchNew = async () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        for (;;) {
          const lines = await logsAfter(services.prisma, deviceId, filter, cursor, FETCH_LIMIT);
          if (stopped || lines.length === 0) break;
          cursor = BigInt(lines[lines.length - 1].id);
          send(lines);
          if (lines.length < FETCH_LIMIT) break;
        }
      } while (again && !stopped);
    } catch (err) {
      services.logger.warn({ err: (err as Error).message, deviceId }, "log follower could not fetch new lines");
    } finally {
      running = false;
    }
  };

  const unsubscribe = pubsub.subscribe(CHANNELS.logs, (body) => {
    if ((body as { deviceId?: string })?.deviceId === deviceId) void fetchNew();
  });
  const unsubscribeResync = pubsub.onResync(() => void fetchNew());
  return {
    poke: () => void fetchNew(),
    stop: () => {
      stopped = true;
      unsubscribe();
      unsubscribeResync();
    },
  };
}
