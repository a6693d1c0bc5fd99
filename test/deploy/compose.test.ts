// deploy/compose.yaml (with compose.metrics.yaml) and compose.replicas.yaml as Docker Compose
// reads them: `docker-compose config` renders the files with a .env like compose.env.example's.
// They are brought up with podman-compose by test/deploy/compose-up.test.ts (docs/install.md).
// Skips without docker-compose (test/support/peers.ts, "dockerd").
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { parse } from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { onPath, peersAvailable } from "../support/peers.js";
import { ROOT } from "../support/server-process.js";

const run = promisify(execFile);
const DEPLOY = path.join(ROOT, "deploy");

describe.skipIf(!peersAvailable("dockerd"))("the compose file", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-compose-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function render(files: string[], values: Record<string, string>) {
    const envFile = path.join(dir, ".env");
    const example = fs.readFileSync(path.join(DEPLOY, "compose.env.example"), "utf8");
    fs.writeFileSync(envFile, example.replace(/^(\w+)=.*$/gm, (line, key: string) => (key in values ? `${key}=${values[key]}` : line)));
    const args = [...files.flatMap((f) => ["-f", path.join(DEPLOY, f)]), "--env-file", envFile, "config"];
    return run(onPath("docker-compose")!, args, { cwd: DEPLOY }).then(({ stdout }) => parse(stdout), (err: { stderr: string }) => ({ error: err.stderr }));
  }

  const secrets = { FLEET_DB_PASSWORD: "a1b2c3", ENCRYPTION_KEY: "ab".repeat(32), JWT_SECRET: "cd".repeat(32), BOOTSTRAP_ADMIN_PASSWORD: "admin-password" };

  it("runs the service read-only on PostgreSQL with its keys from .env and a volume for each", async () => {
    const config = await render(["compose.yaml"], secrets);
    const service = config.services["fleet-manager"];
    expect(service.read_only).toBe(true);
    expect(service.environment).toMatchObject({
      DATABASE_URL: "postgresql://fleet:a1b2c3@postgres:5432/fleet",
      ENCRYPTION_KEY: secrets.ENCRYPTION_KEY,
      JWT_SECRET: secrets.JWT_SECRET,
    });
    expect(service.volumes).toEqual(["fleet-data:/var/lib/fleet:rw"]);
    expect(service.depends_on.postgres.condition).toBe("service_healthy");
    expect(config.services.postgres.environment.POSTGRES_PASSWORD).toBe("a1b2c3");
    expect(config.services.postgres.volumes).toEqual(["postgres-data:/var/lib/postgresql/data:rw"]);
    expect(Object.keys(config.volumes).sort()).toEqual(["fleet-data", "postgres-data"]);
    // no metrics port unless asked
    expect(service.environment.METRICS_PORT).toBeUndefined();
  });

  it("adds metrics on a second port, on the host's loopback, when asked", async () => {
    const service = (await render(["compose.yaml", "compose.metrics.yaml"], secrets)).services["fleet-manager"];
    expect(service.environment).toMatchObject({ METRICS_PORT: "9464", METRICS_HOST: "0.0.0.0" });
    expect(service.ports).toContainEqual("127.0.0.1:9464:9464/tcp");
  });

  it("compose.replicas.yaml: two replicas with the same database and keys, behind nginx on the one published port", async () => {
    const config = await render(["compose.replicas.yaml"], secrets);
    const replicas = ["fleet-manager-1", "fleet-manager-2"].map((name) => config.services[name]);
    for (const [i, replica] of replicas.entries()) {
      expect(replica.environment).toMatchObject({
        DATABASE_URL: "postgresql://fleet:a1b2c3@postgres:5432/fleet",
        ENCRYPTION_KEY: secrets.ENCRYPTION_KEY,
        JWT_SECRET: secrets.JWT_SECRET,
        TRUST_PROXY_HOPS: "1",
      });
      expect(replica.read_only).toBe(true);
      expect(replica.ports).toBeUndefined();
      expect(replica.volumes).toEqual([`fleet-data-${i + 1}:/var/lib/fleet:rw`]);
    }
    expect(config.services.proxy.ports).toEqual([{ published: 3000, target: 80 }]);
    expect(config.services.proxy.image).toBe("docker.io/library/nginx:1.27-bookworm");
    expect(config.services.postgres.image).toBe("docker.io/library/postgres:16-bookworm");
  });

  it("refuses to start without the secrets", async () => {
    expect(await render(["compose.yaml"], { ...secrets, JWT_SECRET: "" })).toEqual({ error: expect.stringContaining("set JWT_SECRET in .env") });
  });
});
