// The device's side of remote access that is plain HTTP (docs/remote-access.md, "Device
// side"): the long-poll GET /agent/remote/wait, answered at once when a session waits for the
// device and otherwise held up to WAIT_SECONDS, and POST /agent/remote-sessions/{id}/refuse.
// The device's stream leg is a WebSocket (src/modules/remote-sessions/upgrade.ts).
import { z } from "zod";
import { Prisma } from "../../generated/prisma/client.js";
import { deviceProcedure } from "../../trpc/procedures.js";
import { notFound } from "../../trpc/errors.js";
import type { Services } from "../../services.js";
import type { DevicePrincipal } from "../../trpc/device-auth.js";
import { perService } from "../../lib/per-service.js";
import { offerOutput, type Offer } from "../remote-sessions/schemas.js";
import { pendingOffers } from "../remote-sessions/offers.js";
import { remoteSignalsOf } from "../remote-sessions/signals.js";
import { policyOf } from "../remote-sessions/service.js";
import { matchesSelector } from "../remote-sessions/settings.js";
import { endSessionsWhere } from "../remote-sessions/lifecycle.js";

/** Below the 60 s idle timeout of common proxies and the server's own request timeout. */
export const WAIT_SECONDS = 50;
const TAG = "Device agent";
const deviceToken = "Authorization: Bearer <device token>";

/** The held long-polls of a service, let go at once when it stops. */
class Waits {
  readonly releases = new Set<() => void>();
  closeAll() {
    for (const release of [...this.releases]) release();
  }
}
export const remoteWaitsOf = perService((_services: Services) => new Waits());

/** Whether the organization's policy allows reaching this device (the agent's own word may still say no). */
export async function remoteAccessEnabledFor(services: Services, device: DevicePrincipal): Promise<boolean> {
  const policy = await policyOf(services.prisma, device.organizationId);
  if (!policy.enabled) return false;
  if (!policy.deviceSelector) return true;
  const row = await services.prisma.device.findUnique({ where: { id: device.deviceId }, select: { labels: true } });
  return matchesSelector(policy, row?.labels);
}

/**
 * Subscribes first, then looks in the table, then blocks: an offer made between the look and
 * the block still wakes it (NOTIFY is never replayed; docs/remote-access.md).
 */
export async function waitForOffers(services: Services, device: DevicePrincipal, gone: Promise<void>, seconds = WAIT_SECONDS): Promise<Offer[]> {
  const waits = remoteWaitsOf(services);
  let wake: () => void = () => undefined;
  let woken = false;
  const unsubscribe = remoteSignalsOf(services).onOffer(device.deviceId, () => {
    woken = true;
    wake();
  });
  let release: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => {
    release = resolve;
    waits.releases.add(release);
  });
  const timer = new Promise<void>((resolve) => setTimeout(resolve, seconds * 1000).unref());
  try {
    for (;;) {
      woken = false;
      const offers = await pendingOffers(services, device.deviceId, true);
      if (offers.length > 0) return offers;
      if (woken) continue; // signalled while looking
      const signalled = new Promise<"signal">((resolve) => (wake = () => resolve("signal")));
      const why = await Promise.race([signalled, timer.then(() => "timeout" as const), gone.then(() => "gone" as const), stopped.then(() => "stopped" as const)]);
      if (why !== "signal") return [];
    }
  } finally {
    unsubscribe();
    waits.releases.delete(release);
  }
}

export const remoteAgentProcedures = {
  remoteWait: deviceProcedure
    .meta({
      openapi: {
        method: "GET", path: "/agent/remote/wait", tags: [TAG],
        summary: "Wait for remote sessions to join (long-poll)",
        description:
          `${deviceToken}. Answers at once with the offers waiting for this device, or holds the request up to ${WAIT_SECONDS} seconds ` +
          "and answers as soon as a session is opened for it (on any service process). `enabled: false` (answered at once) when the " +
          "organization's policy does not allow remote access to this device: hold the long-poll only while the heartbeat says remoteAccess.enabled. " +
          "An offer is handed out once; again after 10 seconds if the device has not joined it.",
        protect: true,
      },
    })
    .input(z.object({}).optional())
    .output(z.object({ enabled: z.boolean(), offers: z.array(offerOutput) }))
    .query(async ({ ctx }) => {
      if (!(await remoteAccessEnabledFor(ctx.services, ctx.device))) return { enabled: false, offers: [] };
      const res = ctx.res;
      const gone = new Promise<void>((resolve) => {
        if (!res) return;
        res.once("close", () => resolve());
      });
      return { enabled: true, offers: await waitForOffers(ctx.services, ctx.device, gone) };
    }),

  remoteRefuse: deviceProcedure
    .meta({
      openapi: {
        method: "POST", path: "/agent/remote-sessions/{id}/refuse", tags: [TAG],
        summary: "Refuse a remote session (the agent's configuration says no, a path outside the allowed roots, ...)",
        description: `${deviceToken}. The user's leg gets { error: reason } on channel 3 and the session ends device-refused. 404 unless the session is this device's.`,
        protect: true,
      },
    })
    .input(z.object({ id: z.string().uuid(), reason: z.string().trim().min(1).max(500) }))
    .output(z.object({ id: z.string().uuid(), state: z.literal("ended"), endReason: z.string() }))
    .mutation(async ({ ctx, input }) => {
      const session = await ctx.services.prisma.remoteSession.findFirst({ where: { id: input.id, deviceId: ctx.device.deviceId }, select: { id: true, state: true, endReason: true } });
      if (!session) throw notFound("Remote session");
      const actor = { type: "device" as const, id: ctx.device.deviceId };
      await endSessionsWhere(ctx.services, Prisma.sql`s."id" = ${session.id}::uuid`, "device-refused", actor, { message: input.reason }, ctx.request);
      const after = await ctx.services.prisma.remoteSession.findUniqueOrThrow({ where: { id: session.id }, select: { endReason: true } });
      return { id: session.id, state: "ended" as const, endReason: after.endReason ?? "device-refused" };
    }),
};
