// Two service instances on one PostgreSQL database, as two processes behind a load balancer:
// the user's leg on one and the device's on the other (docs/remote-access.md, "Several
// processes"). The device's long-poll held by the second is woken by NOTIFY from the first;
// the stream is relayed by the process of the first leg and the other leg is piped there.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, restClient, type Harness } from "../../support/harness.js";
import { onPostgres, startSecondProcess, type SecondProcess } from "../realtime/second-process.js";
import { CH, connect, deviceLeg, openSession, remoteTenant, sessionWhen, wait, wsUrl, type RemoteTenant } from "./support.js";
import { remoteRelayOf } from "../../../src/modules/remote-sessions/relay.js";

describe.runIf(process.env.DATABASE_URL)("remote sessions across two processes (PostgreSQL)", () => {
  let h: Harness;
  let second: SecondProcess;
  let acme: RemoteTenant;

  beforeAll(async () => {
    h = await createHarness();
    expect(onPostgres(h)).toBe(true);
    second = await startSecondProcess(h);
    acme = await remoteTenant(h);
  });
  afterAll(async () => {
    await second?.close();
    await h?.close();
  });

  it("the long-poll on process 2 is woken by a session opened on process 1; legs on different processes carry bytes both ways", async () => {
    const other = { api: restClient(second.url, h.adminKey) };
    const polling = wait(other, acme.device); // held on process 2
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "exec", command: ["cat"] });
    const offer = (await polling).offers.find((o) => o.sessionId === opened.session.id)!;
    expect(offer).toBeDefined();

    const user = await connect(wsUrl(h.url, opened.streamUrl)); // first leg: process 1 relays
    const device = await deviceLeg(second.url, acme.device, offer); // piped from process 2 to process 1
    await sessionWhen(h, opened.session.id, (s) => s.state === "active");
    const relays = [remoteRelayOf(h.services), remoteRelayOf(second.services)];
    expect([...relays[0].streams.values()].some((s) => s.session.id === opened.session.id)).toBe(true);
    expect([...relays[1].forwarded].some((f) => f.sessionId === opened.session.id)).toBe(true);

    const big = Buffer.alloc(3 * 1024 * 1024, 0x62);
    for (let i = 0; i < big.length; i += 64 * 1024) user.send(CH.stdin, big.subarray(i, i + 64 * 1024));
    await device.until(() => device.on(CH.stdin).length === big.length, "stdin at the device");
    device.send(CH.stdout, "done");
    device.send(CH.status, JSON.stringify({ exitCode: 0 }));
    await user.until(() => user.statuses().some((s) => s.exitCode === 0), "the exit code");
    expect(user.on(CH.stdout).toString()).toBe("done");
    device.ws.close(1000);
    await user.waitClosed();
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(stored).toMatchObject({ endReason: "completed", exitCode: 0, bytesToDevice: BigInt(big.length), bytesFromDevice: 4n });
  });

  it("a force-close on process 2 closes legs held by process 1 and piped from process 2", async () => {
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "shell" });
    const offer = (await wait(h, acme.device)).offers.find((o) => o.sessionId === opened.session.id)!;
    const device = await deviceLeg(second.url, acme.device, offer); // first leg on process 2: it relays
    const user = await connect(wsUrl(h.url, opened.streamUrl)); // piped from process 1
    await sessionWhen(h, opened.session.id, (s) => s.state === "active");
    const res = await restClient(second.url, acme.key)("POST", `/api/v1/remote-sessions/${opened.session.id}/close`);
    expect(res.status, res.text).toBe(200);
    await user.waitClosed();
    await device.waitClosed();
    expect(user.statuses().at(-1)).toMatchObject({ endReason: "closed-by-user" });
  });

  it("a forwarded leg is never forwarded again: a hop header on the public port is refused 508", async () => {
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "shell" });
    await expect(connect(wsUrl(h.url, opened.streamUrl), { "x-fleet-relay-hop": "1" })).rejects.toMatchObject({ status: 508 });
    await h.api("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, { key: acme.key });
  });
});
