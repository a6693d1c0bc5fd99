// Shared by the device, group and agent tests: a CA and an enrollment token for a tenant,
// devices enrolled over the real protocol with keys generated here, and devices inserted
// directly (for statistics over hundreds of devices).
import crypto from "node:crypto";
import { expect } from "vitest";
import type { Harness } from "../../support/harness.js";
import { createCsr, generateDeviceKeys, signDeviceToken, x5tS256, type DeviceKeyAlgorithm, type DeviceKeys } from "../../../agent/src/core/identity.js";

/** What the REST helpers need: a harness, or a server process (test/http/scale-out/processes.ts). */
type ApiCaller = Pick<Harness, "api">;

export interface EnrolledDevice {
  deviceId: string;
  keys: DeviceKeys;
  certificate: string;
  certificateId: string;
  x5t: string;
  reportedDeviceId: string;
  token(opts?: { lifetimeSeconds?: number; issuedAt?: number; sub?: string; x5t?: string }): Promise<string>;
}

/** Generates a default CA for the organization of `key` (the PKI capability's operation). */
export async function ensureCa(h: ApiCaller, key: string) {
  const res = await h.api("POST", "/api/v1/ca-certificates/generate", { key, body: { name: `ca-${crypto.randomBytes(3).toString("hex")}`, commonName: "Fleet Test CA" } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string };
}

export async function createEnrollmentToken(h: ApiCaller, key: string, body: Record<string, unknown> = {}) {
  const res = await h.api("POST", "/api/v1/enrollment-tokens", { key, body: { name: "test token", ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; token: string; tokenPrefix: string; labels: Record<string, string> };
}

export async function enroll(
  h: ApiCaller,
  enrollmentToken: string,
  opts: { reportedDeviceId?: string; algorithm?: DeviceKeyAlgorithm; name?: string; facts?: Record<string, unknown> } = {},
): Promise<EnrolledDevice> {
  const reportedDeviceId = opts.reportedDeviceId ?? `hw-${crypto.randomBytes(6).toString("hex")}`;
  const keys = await generateDeviceKeys(opts.algorithm ?? "ES256");
  const csr = await createCsr(keys, reportedDeviceId);
  const res = await h.api("POST", "/api/v1/agent/enroll", {
    key: null,
    body: { enrollmentToken, reportedDeviceId, csr, ...(opts.name ? { name: opts.name } : {}), ...(opts.facts ? { facts: opts.facts } : {}) },
  });
  expect(res.status, res.text).toBe(201);
  const x5t = x5tS256(res.body.certificate);
  const deviceId = res.body.deviceId as string;
  return {
    deviceId,
    keys,
    certificate: res.body.certificate,
    certificateId: res.body.certificateId,
    x5t,
    reportedDeviceId,
    token: (t = {}) => signDeviceToken(keys, { deviceId: t.sub ?? deviceId, x5t: t.x5t ?? x5t, lifetimeSeconds: t.lifetimeSeconds, issuedAt: t.issuedAt }),
  };
}

export async function heartbeat(h: ApiCaller, device: EnrolledDevice, body: Record<string, unknown> = {}, token?: string) {
  return h.api("POST", "/api/v1/agent/heartbeat", { key: null, token: token ?? (await device.token()), body });
}

export interface DeviceSpec {
  name?: string;
  status?: string;
  labels?: Record<string, string>;
  reportedDeviceId?: string | null;
  lastSeenAt?: Date | null;
  /** the architecture as the agent reports it (x86_64, aarch64, ...); absent: not reported */
  arch?: string;
}

/** Inserts devices directly (one statement), for tests that need many of them. */
export async function insertDevices(h: Harness, organizationId: string, specs: DeviceSpec[]): Promise<string[]> {
  const rows = specs.map((s, i) => {
    const reported = s.reportedDeviceId === undefined ? `ins-${crypto.randomBytes(6).toString("hex")}` : s.reportedDeviceId;
    return {
      id: crypto.randomUUID(),
      organizationId,
      name: s.name ?? `device-${i}`,
      reportedDeviceId: reported,
      activeClaim: reported,
      status: s.status ?? "online",
      labels: s.labels ?? {},
      arch: s.arch ?? null,
      lastSeenAt: s.lastSeenAt === undefined ? new Date() : s.lastSeenAt,
    };
  });
  await h.services.prisma.device.createMany({ data: rows });
  return rows.map((r) => r.id);
}
