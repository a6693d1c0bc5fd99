// Shell recordings are kept as long as their organization says (settings.remoteAccess.
// recordingRetentionDays, 90 by default): the hourly run removes older ones in one statement,
// and at once those of an organization that is gone; the session rows stay (the audit trail's),
// and the recording's GET says why it is missing.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { remoteTenant, type RemoteTenant } from "./support.js";
import { pruneRecordings } from "../../../src/modules/remote-sessions/jobs.js";

let h: Harness;
let shortLived: RemoteTenant;
let byDefault: RemoteTenant;

beforeAll(async () => {
  h = await createHarness();
  shortLived = await remoteTenant(h, { enabled: true, recordShell: true, recordingRetentionDays: 7 });
  byDefault = await remoteTenant(h, { enabled: true, recordShell: true });
});
afterAll(() => h?.close());

/** An ended, recorded shell session of `t` whose recording was made `daysAgo` days ago. */
async function recordedSession(t: { org: { id: string }; user: { id: string } }, deviceId: string, daysAgo: number): Promise<string> {
  const id = randomUUID();
  const at = new Date(Date.now() - daysAgo * 86_400_000);
  await h.services.prisma.remoteSession.create({
    data: {
      id, organizationId: t.org.id, deviceId, userId: t.user.id, kind: "shell", state: "ended", tty: true, command: [],
      createdAt: at, startedAt: at, endedAt: at, endReason: "completed", joinDeadline: at, expiresAt: at, idleTimeoutSeconds: 900, recorded: true,
    },
  });
  // PGlite takes no Prisma Bytes: the recording is written as the service writes it, by the raw driver
  await h.services.database.opened.raw.query(
    `INSERT INTO "RemoteSessionRecording" ("sessionId", "data", "bytes", "createdAt", "updatedAt") VALUES ($1::uuid, decode($2, 'base64'), 10, $3, $3)`,
    [id, Buffer.from('{"version":2}\n').toString("base64"), at.toISOString()],
  );
  return id;
}

describe("recording retention", () => {
  it("is a setting: 90 days unless changed, 1 to 3650, the field named when out of range and nothing changed", async () => {
    expect((await h.api("GET", "/api/v1/remote-sessions/settings", { key: byDefault.key })).body.recordingRetentionDays).toBe(90);
    expect((await h.api("GET", "/api/v1/remote-sessions/settings", { key: shortLived.key })).body.recordingRetentionDays).toBe(7);
    const bad = await h.api("PUT", "/api/v1/remote-sessions/settings", { key: shortLived.key, body: { recordingRetentionDays: 0 } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("recordingRetentionDays");
    expect((await h.api("GET", "/api/v1/remote-sessions/settings", { key: shortLived.key })).body.recordingRetentionDays).toBe(7);
  });

  it("removes the recordings past their organization's days, and those of an organization that is gone; the sessions stay", async () => {
    const old7 = await recordedSession(shortLived, shortLived.device.deviceId, 8);
    const fresh7 = await recordedSession(shortLived, shortLived.device.deviceId, 6);
    const old90 = await recordedSession(byDefault, byDefault.device.deviceId, 30);
    // a session of an organization deleted since (sessions have no foreign key to it, like audit entries)
    const orphan = await recordedSession({ org: { id: randomUUID() }, user: shortLived.user }, randomUUID(), 1);

    expect(await pruneRecordings(h.services.prisma)).toBe(2);
    const kept = await h.services.prisma.remoteSessionRecording.findMany({ where: { sessionId: { in: [old7, fresh7, old90, orphan] } }, select: { sessionId: true } });
    expect(kept.map((r) => r.sessionId).sort()).toEqual([fresh7, old90].sort());
    expect(await h.services.prisma.remoteSession.count({ where: { id: { in: [old7, fresh7, old90, orphan] } } })).toBe(4);
    expect(await pruneRecordings(h.services.prisma)).toBe(0);

    // the recording's GET says why it is missing; a kept one plays
    const gone = await h.api("GET", `/api/v1/remote-sessions/${old7}/recording`, { key: shortLived.key });
    expect(gone.status).toBe(404);
    expect(gone.body.message).toBe("The recording was removed: recordings are kept settings.remoteAccess.recordingRetentionDays days");
    const played = await h.api("GET", `/api/v1/remote-sessions/${fresh7}/recording`, { key: shortLived.key });
    expect(played.status).toBe(200);
    expect(played.text).toBe('{"version":2}\n');
  });
});
