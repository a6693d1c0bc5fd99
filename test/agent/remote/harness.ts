// Serving one offer straight through the agent's handlers (agent/src/remote/kinds.ts) against the
// loopback stream server: what the agent does after the wake-up, without the service.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import { defaultRemoteAccess, type RemoteAccessConfig } from "../../../agent/src/remote/config.js";
import { prepareOffer } from "../../../agent/src/remote/kinds.js";
import { DeviceLeg } from "../../../agent/src/remote/leg.js";
import type { Offer, SessionContext } from "../../../agent/src/remote/offer.js";
import { SessionProcesses } from "../../../agent/src/remote/processes.js";
import { DEVICE_TOKEN, type StreamServer, type UserSide } from "./stream-server.js";

/** The defaults, with sessions run as `nobody` (an unprivileged user every Linux has) when the tests run as root. */
export function testConfig(change: (config: RemoteAccessConfig) => void = () => undefined): RemoteAccessConfig {
  const config = defaultRemoteAccess();
  config.user = "nobody";
  change(config);
  return config;
}

export type Served = { refused: string } | { user: UserSide; done: Promise<void> };

export async function serve(server: StreamServer, offer: Omit<Offer, "sessionId" | "token">, config = testConfig()): Promise<Served> {
  const token = randomUUID();
  const ctx: SessionContext = { config, processes: new SessionProcesses(null), log: () => undefined };
  const prepared = prepareOffer({ sessionId: randomUUID(), token, ...offer } as Offer, ctx, () => () => undefined);
  if ("refuse" in prepared) return { refused: prepared.refuse };
  const { url, user } = server.expect(token);
  const leg = await DeviceLeg.open(url, DEVICE_TOKEN);
  const side = await user;
  // served: the device finished and the user side read everything up to the close
  const done = Promise.all([prepared.run(leg), side.closed]).then(() => undefined);
  return { user: side, done };
}

export async function joined(server: StreamServer, offer: Omit<Offer, "sessionId" | "token">, config = testConfig()): Promise<{ user: UserSide; done: Promise<void> }> {
  const served = await serve(server, offer, config);
  if ("refused" in served) throw new Error(`refused: ${served.refused}`);
  return served;
}

export async function refused(server: StreamServer, offer: Omit<Offer, "sessionId" | "token">, config = testConfig()): Promise<string> {
  const served = await serve(server, offer, config);
  if (!("refused" in served)) throw new Error("the offer was served");
  return served.refused;
}

/** Whether a process runs (a zombie waiting for its parent does not count). */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}
