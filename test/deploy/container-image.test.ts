// The container image (Containerfile, docs/install.md) built and run as an operator runs it:
// on Podman, with a read-only root file system and no writable /tmp, one named volume for
// /var/lib/fleet, the port published on loopback. No image can be pulled here, so the base
// (BASE_IMAGE) is made locally once per machine (test/deploy/base-image.ts); the image itself
// is built once per run (test/deploy/service-image.ts; Podman's layer cache keeps the npm install
// while the lock file stays).
// Skips without Podman or mmdebstrap (test/support/peers.ts).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/oci-registry.js";
import { newPostgresDatabase } from "../support/postgres-database.js";
import { peersAvailable, requirePeer } from "../support/peers.js";
import { restClient } from "../support/rest-client.js";
import { buildServiceImage, SERVICE_IMAGE, writeContainersConf } from "./service-image.js";

const run = promisify(execFile);

const IMAGE = SERVICE_IMAGE;
const ADMIN_EMAIL = "admin@example.com";
const ADMIN_PASSWORD = "container-admin-password";
const API_KEY = `fm_${randomBytes(24).toString("hex")}`;
/** `podman stop`'s grace time: after it the engine sends SIGKILL. */
const STOP_GRACE_SECONDS = 30;

describe.skipIf(!peersAvailable("podman", "mmdebstrap"))("the container image", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const name = `fleet-image-test-${process.pid}`;
  const volume = `${name}-data`;
  let port: number;
  let api: ReturnType<typeof restClient>;
  const numbers: Record<string, string> = {};

  const podman = async (args: string[], timeout = 120_000) =>
    (await run(requirePeer("podman"), args, { env, timeout, maxBuffer: 64 * 1024 * 1024 })).stdout;

  async function waitReady(): Promise<number> {
    const started = Date.now();
    await expect.poll(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status, { timeout: 240_000, interval: 250 }).toBe(200);
    return Date.now() - started;
  }

  async function stop(): Promise<{ ms: number; exitCode: number }> {
    const started = Date.now();
    await podman(["stop", "--time", String(STOP_GRACE_SECONDS), name]);
    const ms = Date.now() - started;
    const exitCode = Number((await podman(["inspect", "--format", "{{.State.ExitCode}}", name])).trim());
    return { ms, exitCode };
  }

  /** The container's output so far (stdout and stderr, every start), as lines. */
  async function logLines(): Promise<string[]> {
    const { stdout, stderr } = await run(requirePeer("podman"), ["logs", name], { env, maxBuffer: 64 * 1024 * 1024 });
    return (stdout + stderr).split("\n");
  }

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-image-"));
    env = writeContainersConf(dir);
    const build = await buildServiceImage(podman);
    numbers.build = `${build.seconds} s${build.baseMade ? " (after making the base image)" : ""}`;
    port = await freePort();
    api = restClient(`http://127.0.0.1:${port}`, null);
  }, 40 * 60_000);

  afterAll(async () => {
    if (!env) return;
    await podman(["rm", "--force", "--ignore", name]).catch(() => undefined);
    await podman(["volume", "rm", "--force", volume]).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    console.log(`container image: ${Object.entries(numbers).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  });

  it("holds only what runs, as a user of its own, with a health check on /readyz", async () => {
    const [config] = JSON.parse(await podman(["image", "inspect", IMAGE]));
    expect(config.Config.User).toBe("10001:10001");
    expect(config.Healthcheck.Test.join(" ")).toContain("/readyz");
    expect(config.Config.StopSignal).toBe("SIGTERM");
    numbers.size = `${(config.Size / 1e6).toFixed(0)} MB`;
    const listing = await podman(["run", "--rm", "--read-only", "--entrypoint", "sh", IMAGE, "-c",
      "ls -A /app; ls -A /app/dist; find /app -path /app/node_modules -prune -o \\( -name '*.map' -o -name '*.ts' -o -name '*.tsx' \\) -print | head -5"]);
    // no source, no source map (they carry the sources) beside the packages' own files
    expect(listing.trim().split("\n")).toEqual(["dist", "node_modules", "package.json", "prisma", "web", "service", "tools"]);
  });

  it("starts on the embedded database with a read-only root, signs the admin in, keeps its records across a restart and stops cleanly on SIGTERM", async () => {
    let started = Date.now();
    await podman([
      "run", "--detach", "--name", name,
      // nothing writable but the volume: no /tmp either (Podman mounts tmpfs there by default)
      "--read-only", "--read-only-tmpfs=false",
      "--volume", `${volume}:/var/lib/fleet`,
      "--publish", `127.0.0.1:${port}:3000`,
      "--env", `BOOTSTRAP_ADMIN_PASSWORD=${ADMIN_PASSWORD}`,
      "--env", `BOOTSTRAP_API_KEY=${API_KEY}`,
      IMAGE,
    ]);
    await waitReady();
    numbers["first start to ready"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;

    // not root, inside and as the engine sees it
    expect((await podman(["exec", name, "id", "-u"])).trim()).toBe("10001");
    expect((await podman(["top", name, "user"])).trim().split("\n").slice(1)).toEqual(["fleet"]);
    // the root file system refuses a write; the volume takes it
    await expect(podman(["exec", name, "sh", "-c", "echo x > /app/x"])).rejects.toThrow(/Read-only file system/);
    expect(await podman(["exec", name, "ls", "/var/lib/fleet"])).toMatch(/pgdata/);
    // the engine's health check (HEALTHCHECK): exit 0 is healthy
    expect((await podman(["healthcheck", "run", name]).then(() => "healthy", (err: Error) => err.message))).toBe("healthy");

    // the admin of the first start signs in through the API and creates a record
    const login = await api("POST", "/api/v1/auth/login", { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    expect(login.status).toBe(200);
    const token = login.body.accessToken as string;
    const created = await api("POST", "/api/v1/enrollment-tokens", { token, body: { name: "kept across restarts" } });
    expect(created.status).toBe(201);
    // and the bootstrap API key from the environment works
    expect((await api("GET", "/api/v1/enrollment-tokens", { key: API_KEY })).status).toBe(200);

    await new Promise((resolve) => setTimeout(resolve, 5000));
    numbers["idle memory after the first start"] = (await podman(["stats", "--no-stream", "--format", "{{.MemUsage}}", name])).trim().split(" / ")[0];

    const first = await stop();
    expect(first.exitCode).toBe(0);
    expect(first.ms).toBeLessThan(STOP_GRACE_SECONDS * 1000);
    numbers["stop"] = `${first.ms} ms`;

    started = Date.now();
    await podman(["start", name]);
    await waitReady();
    numbers["restart to ready"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;
    // the record and the admin's session are still there
    const listed = await api("GET", "/api/v1/enrollment-tokens", { token });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((t: { id: string; name: string }) => [t.id, t.name])).toContainEqual([created.body.id, "kept across restarts"]);
    await new Promise((resolve) => setTimeout(resolve, 5000));
    numbers["idle memory after a restart"] = (await podman(["stats", "--no-stream", "--format", "{{.MemUsage}}", name])).trim().split(" / ")[0];
    // the embedded database's backup while it runs (docs/install.md, "Backup"): the service writes the dump
    const backup = await podman(["exec", name, "node", "dist/tools/db-backup.js", "--out", "/var/lib/fleet/backup.tar.gz"]);
    expect(backup).toContain("written by the running service");
    expect(Number((await podman(["exec", name, "stat", "-c", "%s", "/var/lib/fleet/backup.tar.gz"])).trim())).toBeGreaterThan(100_000);
    await podman(["exec", name, "rm", "/var/lib/fleet/backup.tar.gz"]);

    const second = await stop();
    expect(second.exitCode).toBe(0);
    expect(second.ms).toBeLessThan(STOP_GRACE_SECONDS * 1000);

    // Logs: JSON lines, but for the first start's block for the terminal (src/main.ts), which
    // names where the generated secrets are kept (none here: both came from the environment).
    const lines = await logLines();
    const blockStart = lines.findIndex((line) => line.startsWith("First start: created organization"));
    expect(blockStart).toBeGreaterThan(0);
    const blockEnd = lines.indexOf("", blockStart);
    expect(lines.slice(blockStart, blockEnd).join("\n")).not.toContain(ADMIN_PASSWORD);
    const rest = [...lines.slice(0, blockStart), ...lines.slice(blockEnd)].filter((line) => line !== "");
    const records = rest.map((line) => {
      try {
        return JSON.parse(line) as { level: number; msg: string; time: string };
      } catch {
        return { notJson: line };
      }
    });
    expect(records.filter((r) => "notJson" in r)).toEqual([]);
    const messages = records.map((r) => (r as { msg: string }).msg);
    // two starts, two clean stops, nothing at error level or above, no stack trace
    expect(messages.filter((m) => m === "ready")).toHaveLength(2);
    expect(messages.filter((m) => m === "stopped")).toHaveLength(2);
    expect(records.filter((r) => (r as { level: number }).level >= 50)).toEqual([]);
    expect(lines.filter((line) => /^\s+at /.test(line) || line.includes("    at "))).toEqual([]);
    // a first start on the embedded database creates it (a minute and more on a loaded 2-core machine)
  }, 10 * 60_000);

  // With DATABASE_URL (a PostgreSQL server on this machine's loopback, hence the host's network):
  // two workers in the container migrate an empty database together (under the advisory lock)
  // and serve one port; the admin signs in; SIGTERM stops both. .ci/run's PostgreSQL phase does
  // not run this file (one image build per run): run it by hand with DATABASE_URL set.
  it.skipIf(!process.env.DATABASE_URL)("starts on PostgreSQL with two workers and stops cleanly", async () => {
    const database = await newPostgresDatabase(process.env.DATABASE_URL!);
    const pgName = `${name}-pg`;
    const pgPort = await freePort();
    try {
      await podman([
        "run", "--detach", "--name", pgName, "--read-only", "--read-only-tmpfs=false", "--network", "host",
        "--env", `PORT=${pgPort}`, "--env", "HOST=127.0.0.1", "--env", "WORKERS=2",
        "--env", `DATABASE_URL=${database.url}`,
        "--env", `ENCRYPTION_KEY=${randomBytes(32).toString("hex")}`, "--env", `JWT_SECRET=${randomBytes(32).toString("hex")}`,
        "--env", `BOOTSTRAP_ADMIN_PASSWORD=${ADMIN_PASSWORD}`,
        IMAGE,
      ]);
      await expect.poll(async () => (await fetch(`http://127.0.0.1:${pgPort}/readyz`).catch(() => null))?.status, { timeout: 120_000, interval: 250 }).toBe(200);
      const login = await restClient(`http://127.0.0.1:${pgPort}`, null)("POST", "/api/v1/auth/login", { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
      expect(login.status).toBe(200);
      // the primary and its two workers, none of them root
      expect((await podman(["top", pgName, "user"])).trim().split("\n").slice(1)).toEqual(["fleet", "fleet", "fleet"]);
      await podman(["stop", "--time", String(STOP_GRACE_SECONDS), pgName]);
      expect((await podman(["inspect", "--format", "{{.State.ExitCode}}", pgName])).trim()).toBe("0");
      const { stdout } = await run(requirePeer("podman"), ["logs", pgName], { env });
      expect(stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line).msg)).toContain("ready");
    } finally {
      await podman(["rm", "--force", "--volumes", "--ignore", pgName]).catch(() => undefined);
      await database.drop();
    }
  }, 5 * 60_000);
});
