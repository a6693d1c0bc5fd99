// What the compose tests share, whichever program brings the files up (podman-compose in
// compose-up.test.ts, Docker Compose in compose-docker.test.ts): the .env an operator writes
// from compose.env.example, waiting for /readyz on the published port, the admin's sign-in, and
// a simulated device that enrolls and heartbeats through that port.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { expect } from "vitest";
import { JsonClient, VirtualDevice } from "../../src/simulator/index.js";
import type { restClient } from "../support/rest-client.js";
import { ROOT } from "../support/server-process.js";
import { SERVICE_IMAGE } from "./service-image.js";

export const DEPLOY = path.join(ROOT, "deploy");
export const ADMIN_EMAIL = "admin@example.com";
export const ADMIN_PASSWORD = "compose-admin-password";

/** The settings deploy/compose.yaml reads (the operator's .env), with the local stand-in for the official postgres and nginx images. */
export function composeSettings(standInImage: string): Record<string, string> {
  return {
    FLEET_IMAGE: SERVICE_IMAGE,
    POSTGRES_IMAGE: standInImage,
    PROXY_IMAGE: standInImage,
    FLEET_DB_PASSWORD: randomBytes(24).toString("hex"),
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    JWT_SECRET: randomBytes(32).toString("hex"),
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
  };
}

/** Waits until the service behind `port` answers /readyz 200; how long that took (ms). */
export async function waitReady(port: number): Promise<number> {
  const started = Date.now();
  await expect.poll(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status, { timeout: 240_000, interval: 250 }).toBe(200);
  return Date.now() - started;
}

export async function signIn(api: ReturnType<typeof restClient>): Promise<string> {
  const login = await api("POST", "/api/v1/auth/login", { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
  expect(login.status).toBe(200);
  return login.body.accessToken as string;
}

/**
 * The organization's CA (its key sealed with ENCRYPTION_KEY from .env) and an enrollment token
 * named `tokenName`; a simulated device `deviceName` enrolls with it and heartbeats through `port`.
 */
export async function enrollThrough(api: ReturnType<typeof restClient>, token: string, port: number, tokenName: string, deviceName: string): Promise<VirtualDevice> {
  expect((await api("POST", "/api/v1/ca-certificates/generate", { token, body: { name: `${tokenName} CA`, commonName: `${tokenName} Fleet CA` } })).status).toBe(201);
  const enrollment = await api("POST", "/api/v1/enrollment-tokens", { token, body: { name: tokenName } });
  expect(enrollment.status).toBe(201);
  const device = new VirtualDevice(deviceName, new JsonClient(`http://127.0.0.1:${port}`));
  const enrolled = await device.enroll(enrollment.body.token);
  expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(200);
  expect((await device.heartbeat(true)).status).toBe(200);
  return device;
}

/** After a restart: the admin's session still holds (the same JWT_SECRET, the session in PostgreSQL), the device and the one token are there, the device heartbeats. */
export async function expectRecordsKept(api: ReturnType<typeof restClient>, token: string, device: VirtualDevice, tokenName: string): Promise<void> {
  const devices = await api("GET", "/api/v1/devices", { token });
  expect(devices.status).toBe(200);
  expect(devices.body.items.map((d: { name: string }) => d.name)).toContain(device.reportedDeviceId);
  expect((await device.heartbeat()).status).toBe(200);
  // the token made before the restart, once (the second start made nothing again)
  expect((await api("GET", "/api/v1/enrollment-tokens", { token })).body.items.map((t: { name: string }) => t.name)).toEqual([tokenName]);
}
