// port-forward: one offer, and one stream, per TCP connection the user opens. The target must
// match the device's remoteAccess.portForward.allow (default: its loopback only); raw bytes on
// channel 0 (to the target) and 1 (from it), each side's end of data passed on as a half-close
// ([255, 0] ends writing to the target; the target's end is sent as [255, 1]), so protocols that
// read to the end of the request work. A connection that cannot be made is said on channel 3.
import net from "node:net";
import { CLOSE, STDIN, STDOUT } from "./frames.js";
import { allowedTarget } from "./config.js";
import { pipeToLeg, writeFromLeg, type DeviceLeg } from "./leg.js";
import { refuse, type Offer, type Prepared, type SessionContext } from "./offer.js";

export const DEFAULT_TARGET_HOST = "127.0.0.1";

export function preparePortForward(offer: Offer, ctx: SessionContext, track: (end: () => void) => () => void): Prepared {
  const { portForward } = ctx.config;
  if (!portForward.enabled) return refuse("the device's configuration switches port forwarding off (remoteAccess.portForward.enabled: false)");
  const host = offer.target?.host || DEFAULT_TARGET_HOST;
  const port = offer.target?.port;
  if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) return refuse("target.port: a port number 1-65535");
  if (!allowedTarget(portForward.allow, host, port as number)) {
    return refuse(`the device's remoteAccess.portForward.allow does not include ${host.includes(":") ? `[${host}]` : host}:${port} (allowed: ${portForward.allow.join(", ") || "nothing"})`);
  }
  return { run: (leg) => forward(leg, host, port as number, track) };
}

async function forward(leg: DeviceLeg, host: string, port: number, track: (end: () => void) => () => void): Promise<void> {
  const socket = net.connect({ host, port, allowHalfOpen: true });
  socket.setNoDelay(true);
  const untrack = track(() => socket.destroy());
  let pending: Buffer[] | null = [];
  let endPending = false;
  // frames that arrive before the connection is made wait for it (never more than the leg holds back)
  leg.on("frame", ({ channel, payload }) => {
    if (channel === STDIN) {
      if (pending) pending.push(Buffer.from(payload));
      else writeFromLeg(leg, socket, payload);
    } else if (channel === CLOSE && payload[0] === STDIN) {
      if (pending) endPending = true;
      else socket.end();
    }
  });
  leg.once("close", () => socket.destroy());
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
  } catch (error) {
    leg.status({ error: `cannot connect to ${host}:${port} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})` });
    leg.close(1000, "connect failed");
    untrack();
    return;
  }
  for (const chunk of pending ?? []) writeFromLeg(leg, socket, chunk);
  pending = null;
  if (endPending) socket.end();
  socket.on("error", () => undefined);
  await pipeToLeg(socket, leg, STDOUT);
  if (socket.readableEnded) leg.halfClose(STDOUT);
  // both ways done, or the target reset: the stream ends (after what was sent is written)
  await new Promise<void>((resolve) => (socket.closed ? resolve() : socket.once("close", () => resolve())));
  leg.close(1000, "completed");
  untrack();
}
