// Shared by the remote-session tests: a tenant whose owner key names the remote permissions,
// an enrolled device that heartbeats (online), and a TEST device leg written with `ws` that
// speaks the contract's device protocol (docs/remote-access.md, "Device side").
import { expect } from "vitest";
import WebSocket from "ws";
import type { Harness, Tenant } from "../../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat, type EnrolledDevice } from "../agent/fleet-support.js";
import { REMOTE_NAMED_PERMISSIONS } from "../../../src/trpc/permissions.js";

export const CH = { stdin: 0, stdout: 1, stderr: 2, status: 3, resize: 4, close: 255 } as const;
export const REMOTE_KEY_PERMISSIONS = ["*", ...REMOTE_NAMED_PERMISSIONS];

type ApiCaller = Pick<Harness, "api">;

export interface RemoteTenant extends Tenant {
  device: EnrolledDevice;
}

export async function remoteTenant(h: Harness, settings: Record<string, unknown> = { enabled: true }): Promise<RemoteTenant> {
  const tenant = await h.createTenant(undefined, REMOTE_KEY_PERMISSIONS);
  await ensureCa(h, tenant.key);
  const { token } = await createEnrollmentToken(h, tenant.key);
  const device = await enroll(h, token);
  expect((await heartbeat(h, device, { status: "online" })).status).toBe(200);
  if (Object.keys(settings).length) {
    const res = await h.api("PUT", "/api/v1/remote-sessions/settings", { key: tenant.key, body: settings });
    expect(res.status, res.text).toBe(200);
  }
  return { ...tenant, device };
}

export async function openSession(h: ApiCaller, key: string, body: Record<string, unknown>) {
  const res = await h.api("POST", "/api/v1/remote-sessions", { key, body });
  expect(res.status, res.text).toBe(201);
  return res.body as { session: { id: string; deviceId: string; kind: string; state: string }; ticket: string; streamUrl: string; connectionId: string };
}

export const wsUrl = (base: string, path: string) => base.replace(/^http/, "ws") + path;

/** A WebSocket that collects what it receives; resolves once open (rejects with the refusal's status). */
export function connect(url: string, headers: Record<string, string> = {}): Promise<Leg> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const leg = new Leg(ws);
    ws.once("open", () => resolve(leg));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => reject(Object.assign(new Error(`refused ${res.statusCode}: ${body}`), { status: res.statusCode, body })));
    });
    ws.once("error", reject);
  });
}

export class Leg {
  readonly messages: Buffer[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: Array<() => void> = [];

  constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.messages.push(Buffer.from(data));
      this.notify();
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.notify();
    });
  }

  private notify() {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Waits until `done` holds (checked at every message and at close). */
  async until(done: () => boolean, what: string): Promise<void> {
    while (!done()) {
      if (this.closed && !done()) throw new Error(`closed (${this.closed.code} ${this.closed.reason}) before ${what}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  send(channel: number, data: Buffer | string) {
    this.ws.send(Buffer.concat([Buffer.from([channel]), Buffer.from(data)]));
  }

  /** The bytes received on a channel, concatenated. */
  on(channel: number): Buffer {
    return Buffer.concat(this.messages.filter((m) => m[0] === channel).map((m) => m.subarray(1)));
  }

  statuses(): Record<string, unknown>[] {
    return this.messages.filter((m) => m[0] === CH.status).map((m) => JSON.parse(m.subarray(1).toString()));
  }

  waitClosed(): Promise<{ code: number; reason: string }> {
    return this.until(() => this.closed !== null, "close").then(() => this.closed!);
  }
}

/** The device's long-poll. */
export async function wait(h: ApiCaller, device: EnrolledDevice) {
  const res = await h.api("GET", "/api/v1/agent/remote/wait", { key: null, token: await device.token() });
  expect(res.status, res.text).toBe(200);
  return res.body as { enabled: boolean; offers: { sessionId: string; connectionId: string; token: string; streamUrl: string; kind: string; command: string[] }[] };
}

/** The device's leg of an offer, as the agent opens it. */
export async function deviceLeg(base: string, device: EnrolledDevice, offer: { streamUrl: string; token: string }) {
  return connect(wsUrl(base, `${offer.streamUrl}?token=${encodeURIComponent(offer.token)}`), { authorization: `Bearer ${await device.token()}` });
}

/** Polls the stored session until `done` (the legs' end is written after the sockets close). */
export async function sessionWhen(h: Harness, id: string, done: (s: Record<string, any>) => boolean) {
  for (let i = 0; i < 400; i++) {
    const s = await h.services.prisma.remoteSession.findUniqueOrThrow({ where: { id } });
    if (done(s)) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`session ${id} never reached the expected state`);
}
