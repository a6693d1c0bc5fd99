// A session end to end over the real WebSockets, with a TEST device leg written here that
// speaks the contract's device protocol (docs/remote-access.md): the long-poll answers at
// once, bytes pass both ways, the exit code and the byte counts are stored, audited; the
// relay's back-pressure bounds what the service holds; the join deadline; another Origin;
// a revoked certificate ending a live session.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { CH, connect, deviceLeg, openSession, remoteTenant, sessionWhen, wait, wsUrl, type RemoteTenant } from "./support.js";
import { HIGH_WATER_BYTES, MAX_MESSAGE_BYTES, remoteRelayOf } from "../../../src/modules/remote-sessions/relay.js";

let h: Harness;
let acme: RemoteTenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await remoteTenant(h, { enabled: true, recordShell: true, maxSessionsPerDevice: 20, maxSessionsPerUser: 20 });
});
afterAll(() => h?.close());

/** Opens a session, the device's long-poll picks it up, both legs join. */
async function joined(body: Record<string, unknown>, t: RemoteTenant = acme) {
  const opened = await openSession(h, t.key, { deviceId: t.device.deviceId, ...body });
  const user = await connect(wsUrl(h.url, opened.streamUrl));
  const offer = (await wait(h, t.device)).offers.find((o) => o.sessionId === opened.session.id)!;
  expect(offer).toBeDefined();
  const device = await deviceLeg(h.url, t.device, offer);
  return { opened, user, device, offer };
}

describe("a session end to end", () => {
  it("exec: stdin to the device, stdout and stderr back, the exit code; counts, state and audit stored", async () => {
    const { opened, user, device, offer } = await joined({ kind: "exec", command: ["sh", "-c", "cat; exit 3"] });
    expect(offer.command).toEqual(["sh", "-c", "cat; exit 3"]);
    await sessionWhen(h, opened.session.id, (s) => s.state === "active");
    user.send(CH.stdin, "hello device");
    user.send(CH.close, Buffer.from([CH.stdin]));
    await device.until(() => device.on(CH.stdin).toString() === "hello device" && device.messages.some((m) => m[0] === CH.close), "stdin at the device");
    device.send(CH.stdout, "hello user");
    device.send(CH.stderr, "warn");
    device.send(CH.status, JSON.stringify({ exitCode: 3 }));
    await user.until(() => user.statuses().some((s) => s.exitCode === 3), "exit code at the user");
    expect(user.on(CH.stdout).toString()).toBe("hello user");
    expect(user.on(CH.stderr).toString()).toBe("warn");
    device.ws.close(1000);
    expect((await user.waitClosed()).code).toBe(1000);
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(stored).toMatchObject({ endReason: "completed", exitCode: 3, bytesToDevice: 12n, bytesFromDevice: 14n });
    const got = await h.api("GET", `/api/v1/remote-sessions/${opened.session.id}`, { key: acme.key });
    expect(got.body).toMatchObject({ state: "ended", endReason: "completed", exitCode: 3, bytesToDevice: 12, bytesFromDevice: 14 });
    // each written as its moment comes (the start's beside the relay, not in the request): poll, in any order of equal times
    const actions = async () => (await h.services.prisma.auditEntry.findMany({ where: { entityId: opened.session.id } })).map((a) => a.action).sort();
    await expect.poll(actions).toEqual(["remote-session.ended", "remote-session.requested", "remote-session.started"]);
  });

  it("a user cannot forge the device's status; the ticket and the device token are used once", async () => {
    const { opened, user, device, offer } = await joined({ kind: "shell" });
    user.send(CH.status, JSON.stringify({ exitCode: 9 }));
    user.send(CH.stdin, "x");
    await device.until(() => device.on(CH.stdin).length === 1, "stdin");
    expect(device.messages.filter((m) => m[0] === CH.status)).toEqual([]);
    await expect(connect(wsUrl(h.url, opened.streamUrl))).rejects.toMatchObject({ status: 401 });
    await expect(deviceLeg(h.url, acme.device, offer)).rejects.toMatchObject({ status: 404 });
    user.ws.close();
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(stored).toMatchObject({ endReason: "closed-by-user", exitCode: null });
  });

  it("a shell's output is recorded as asciicast v2 and played back through GET .../recording", async () => {
    const { opened, user, device } = await joined({ kind: "shell", cols: 90, rows: 20 });
    user.send(CH.resize, JSON.stringify({ cols: 100, rows: 30 }));
    await device.until(() => device.messages.some((m) => m[0] === CH.resize), "resize at the device");
    device.send(CH.stdout, "$ héllo\r\n");
    await user.until(() => user.on(CH.stdout).length > 0, "output");
    user.ws.close();
    await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    const res = await waitForRecording(opened.session.id);
    expect(res.headers.get("content-type")).toContain("application/x-asciicast");
    const lines = res.text.trim().split("\n").map((l: string) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ version: 2, width: 90, height: 20 });
    expect(lines.slice(1).map((l: unknown[]) => [l[1], l[2]])).toEqual([["r", "100x30"], ["o", "$ héllo\r\n"]]);
  });

  it("the device's refusal reaches the user on channel 3 and ends the session device-refused", async () => {
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "file-read", path: "/etc/shadow" });
    const user = await connect(wsUrl(h.url, opened.streamUrl));
    const res = await h.api("POST", `/api/v1/agent/remote-sessions/${opened.session.id}/refuse`, {
      key: null, token: await acme.device.token(), body: { reason: "path outside the allowed roots (files.roots: /var/log)" },
    });
    expect(res.status, res.text).toBe(200);
    await user.until(() => user.statuses().length > 0, "the refusal");
    expect(user.statuses()[0]).toMatchObject({ error: "path outside the allowed roots (files.roots: /var/log)" });
    await user.waitClosed();
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(stored.endReason).toBe("device-refused");
    expect(await h.services.prisma.auditEntry.count({ where: { entityId: opened.session.id, action: "remote-session.refused", actorType: "device" } })).toBe(1);
  });

  it("a refusal before the user's leg connects is kept in words: the session says why, and its stream is refused", async () => {
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "exec", command: ["uname"] });
    const res = await h.api("POST", `/api/v1/agent/remote-sessions/${opened.session.id}/refuse`, {
      key: null, token: await acme.device.token(), body: { reason: "exec is switched off on this device (remote.exec: false)" },
    });
    expect(res.status, res.text).toBe(200);
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(stored).toMatchObject({ endReason: "device-refused", endMessage: "exec is switched off on this device (remote.exec: false)" });
    const shown = await h.api("GET", `/api/v1/remote-sessions/${opened.session.id}`, { key: acme.key });
    expect(shown.body).toMatchObject({ state: "ended", endReason: "device-refused", endMessage: "exec is switched off on this device (remote.exec: false)" });
    await expect(connect(wsUrl(h.url, opened.streamUrl))).rejects.toMatchObject({ status: 401 });
  });
});

async function waitForRecording(id: string) {
  for (let i = 0; i < 100; i++) {
    const res = await h.api("GET", `/api/v1/remote-sessions/${id}/recording`, { key: acme.key });
    if (res.status === 200) return res;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("no recording");
}

describe("flow control", () => {
  it("a flood from the device while the user does not read: the device leg is paused, the service holds at most the watermark plus a message", async () => {
    const { opened, user, device } = await joined({ kind: "exec", command: ["cat", "/dev/urandom"] });
    await sessionWhen(h, opened.session.id, (s) => s.state === "active");
    user.ws.pause(); // the user's side stops reading: its kernel buffers fill, then the service's send buffer
    const chunk = Buffer.concat([Buffer.from([CH.stdout]), Buffer.alloc(64 * 1024, 0x61)]);
    const relay = remoteRelayOf(h.services);
    const stream = [...relay.streams.values()].find((s) => s.session.id === opened.session.id)!;
    let sent = 0;
    // Send until the service stops reading: the device's own send buffer then grows (nothing takes it).
    while (!(stream.fromDevice?.paused && device.ws.bufferedAmount > 4 * HIGH_WATER_BYTES)) {
      device.ws.send(chunk);
      sent += chunk.length - 1;
      if (device.ws.bufferedAmount > 2 * HIGH_WATER_BYTES) await new Promise((r) => setImmediate(r));
      expect(sent).toBeLessThan(512 * 1024 * 1024);
    }
    expect(stream.fromDevice!.paused).toBe(true);
    expect(stream.user!.bufferedAmount).toBeLessThanOrEqual(HIGH_WATER_BYTES + MAX_MESSAGE_BYTES);
    // The user reads again: everything arrives, the device leg is read again.
    user.ws.resume();
    await user.until(() => user.on(CH.stdout).length === sent, "all the flood");
    expect(stream.fromDevice!.paused).toBe(false);
    device.ws.close(1000);
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(Number(stored.bytesFromDevice)).toBe(sent);
  });
});

describe("refusals and endings", () => {
  it("a session the device never joins ends device-never-joined at its join deadline", async () => {
    const t = await remoteTenant(h, { enabled: true, joinTimeoutSeconds: 5 });
    const opened = await openSession(h, t.key, { deviceId: t.device.deviceId, kind: "shell" });
    const user = await connect(wsUrl(h.url, opened.streamUrl));
    await user.until(() => user.closed !== null, "the end");
    expect(user.statuses()[0]).toMatchObject({ endReason: "device-never-joined" });
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(stored.endReason).toBe("device-never-joined");
    expect(stored.endedAt!.getTime() - stored.createdAt.getTime()).toBeGreaterThanOrEqual(5000);
    // nothing is offered to the device any more
    expect(await h.services.prisma.remoteConnection.count({ where: { sessionId: opened.session.id, endedAt: null } })).toBe(0);
  });

  it("a browser WebSocket from another Origin is refused 403 (the ticket stays unused)", async () => {
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "shell" });
    await expect(connect(wsUrl(h.url, opened.streamUrl), { origin: "https://evil.example" })).rejects.toMatchObject({ status: 403 });
    const own = await connect(wsUrl(h.url, opened.streamUrl), { origin: h.url });
    own.ws.close();
    await sessionWhen(h, opened.session.id, (s) => s.state === "ended" || s.state === "pending");
    await h.api("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, { key: acme.key });
  });

  it("the device leg needs the device's own token and the offer's token", async () => {
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "shell" });
    const offer = (await wait(h, acme.device)).offers.find((o) => o.sessionId === opened.session.id)!;
    const other = await remoteTenant(h);
    await expect(deviceLeg(h.url, other.device, offer)).rejects.toMatchObject({ status: 404 });
    await expect(connect(wsUrl(h.url, `${offer.streamUrl}?token=${offer.token}`))).rejects.toMatchObject({ status: 401 });
    await h.api("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, { key: acme.key });
  });

  it("revoking the device's certificate ends its live session", async () => {
    const t = await remoteTenant(h);
    const { opened, user } = await joined({ kind: "shell" }, t);
    await sessionWhen(h, opened.session.id, (s) => s.state === "active");
    const res = await h.api("POST", `/api/v1/devices/${t.device.deviceId}/certificates/${t.device.certificateId}/revoke`, { key: t.key, body: { reason: "Key compromise" } });
    expect(res.status, res.text).toBe(200);
    await user.waitClosed();
    expect(user.statuses().at(-1)).toMatchObject({ endReason: "certificate-revoked" });
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(stored.endReason).toBe("certificate-revoked");
  });

  it("force-close by an administrator closes both legs at once", async () => {
    const { opened, user, device } = await joined({ kind: "shell" });
    const res = await h.api("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, { key: acme.key });
    expect(res.status).toBe(200);
    await user.waitClosed();
    await device.waitClosed();
    expect(user.statuses().at(-1)).toMatchObject({ endReason: "closed-by-user" });
  });
});
