// deploy/systemd/fleet-manager.service started by systemd, as on a VM (docs/install.md,
// "systemd"): in a container whose PID 1 is systemd (test/deploy/systemd-image.ts), the service
// in /opt/fleet-manager, its settings in /etc/fleet-manager/fleet-manager.env. systemd sets up
// the unit's sandbox (ProtectSystem=strict, PrivateTmp, DynamicUser...) with mount namespaces,
// which a container may make only with CAP_SYS_ADMIN: the container gets that capability, the
// service itself none (CapabilityBoundingSet= is empty). Published on the loopback only.
// Skips without Podman or mmdebstrap.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/oci-registry.js";
import { peersAvailable, requirePeer } from "../support/peers.js";
import { restClient } from "../support/rest-client.js";
import { enrollThrough, waitReady } from "./compose-support.js";
import { buildServiceImage, writeContainersConf } from "./service-image.js";
import { buildSystemdImage, SYSTEMD_IMAGE } from "./systemd-image.js";

const run = promisify(execFile);
const ADMIN = { email: "admin@vm.example", password: "systemd-admin-password" };

describe.skipIf(!peersAvailable("podman", "mmdebstrap"))("the systemd unit, started by systemd", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const name = `fleet-systemd-${process.pid}`;
  const numbers: Record<string, string> = {};

  const podman = async (args: string[], timeout = 120_000) =>
    (await run(requirePeer("podman"), args, { env, timeout, maxBuffer: 64 * 1024 * 1024 })).stdout;
  /** a command on the "VM" */
  const vm = (...args: string[]) => podman(["exec", name, ...args]).then((out) => out.trim());
  const unit = async (...properties: string[]) =>
    Object.fromEntries((await vm("systemctl", "show", ...properties.map((p) => `--property=${p}`), "fleet-manager.service")).split("\n").map((line) => line.split("=", 2)));

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-systemd-run-"));
    env = writeContainersConf(dir);
    await buildServiceImage((args, timeout) => podman(args, timeout ?? 25 * 60_000));
    await buildSystemdImage((args, timeout) => podman(args, timeout ?? 25 * 60_000));
  }, 40 * 60_000);

  afterAll(async () => {
    if (env) await podman(["rm", "--force", "--time", "5", name]).catch(() => undefined);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    console.log(`systemd unit: ${Object.entries(numbers).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  });

  it("runs as a user of its own in its state directory, read-only elsewhere, restarts after a crash and stops cleanly; no secret in the journal", async () => {
    const port = await freePort();
    // the operator's settings file (docs/install.md): the admin chosen here, not generated
    const settings = path.join(dir, "fleet-manager.env");
    fs.writeFileSync(settings, `BOOTSTRAP_ADMIN_EMAIL=${ADMIN.email}\nBOOTSTRAP_ADMIN_PASSWORD=${ADMIN.password}\n`);
    const started = Date.now();
    await podman(["run", "--detach", "--name", name, "--systemd=always", "--cap-add", "SYS_ADMIN",
      "--publish", `127.0.0.1:${port}:3000`, "--volume", `${settings}:/etc/fleet-manager/fleet-manager.env:ro`, SYSTEMD_IMAGE]);
    await waitReady(port);
    numbers["boot to ready (first start, every migration)"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;
    expect(await unit("ActiveState", "UnitFileState")).toEqual({ ActiveState: "active", UnitFileState: "enabled" });

    // DynamicUser: a uid systemd allots (61184-65519), not root; the data in the state directory
    const { MainPID: pid } = await unit("MainPID");
    const uid = Number(await vm("stat", "-c", "%u", `/proc/${pid}`));
    expect(uid).toBeGreaterThanOrEqual(61184);
    expect(uid).toBeLessThanOrEqual(65519);
    expect((await vm("stat", "-c", "%u %a", "/var/lib/private/fleet-manager")).split(" ")).toEqual([String(uid), "700"]);
    expect(await vm("ls", "/var/lib/private/fleet-manager")).toContain("encryption.key");
    // ProtectSystem=strict: the service sees / read-only (its state directory is the one writable place)
    const mounts = (await vm("cat", `/proc/${pid}/mountinfo`)).split("\n").map((line) => line.split(" "));
    expect(mounts.find((m) => m[4] === "/")?.[5].split(",")).toContain("ro");
    expect(mounts.find((m) => m[4] === "/var/lib/private/fleet-manager")?.[5].split(",")).toContain("rw");
    // no capability at all (CapabilityBoundingSet= is empty)
    expect(await vm("grep", "CapEff", `/proc/${pid}/status`)).toMatch(/CapEff:\s+0+$/);

    // the service works: the admin of the settings file signs in, a device enrolls and heartbeats
    const api = restClient(`http://127.0.0.1:${port}`, null);
    const login = await api("POST", "/api/v1/auth/login", { body: ADMIN });
    expect(login.status).toBe(200);
    const device = await enrollThrough(api, login.body.accessToken, port, "vm device", "vm-device-1");

    // a crash (SIGKILL): Restart=on-failure starts it again, and every record is there
    await vm("systemctl", "kill", "--signal=SIGKILL", "fleet-manager.service");
    await expect.poll(async () => (await unit("NRestarts")).NRestarts, { timeout: 60_000, interval: 500 }).toBe("1");
    await waitReady(port);
    expect((await device.heartbeat()).status).toBe(200);
    const devices = await api("GET", "/api/v1/devices", { token: login.body.accessToken });
    expect(devices.body.items.map((d: { name: string }) => d.name)).toEqual(["vm-device-1"]);

    // systemctl stop: SIGTERM, a clean exit 0 well within TimeoutStopSec
    const stopping = Date.now();
    await vm("systemctl", "stop", "fleet-manager.service");
    numbers["systemctl stop"] = `${Date.now() - stopping} ms`;
    expect(await unit("ActiveState", "Result", "ExecMainStatus")).toEqual({ ActiveState: "inactive", Result: "success", ExecMainStatus: "0" });

    // the journal holds the service's log and no secret: not the settings file's password, not the
    // session's token, not the API key the first start generated (in first-start.txt alone)
    const journal = await vm("journalctl", "--unit=fleet-manager.service", "--no-pager", "--output=cat");
    expect(journal).toContain('"msg":"ready"');
    expect(journal).not.toContain(ADMIN.password);
    expect(journal).not.toContain(login.body.accessToken);
    const generatedKey = /API key: +(fm_\S+)/.exec(await vm("cat", "/var/lib/private/fleet-manager/first-start.txt"))?.[1];
    expect(generatedKey).toMatch(/^fm_/);
    expect(journal).not.toContain(generatedKey);
    expect(journal).toContain("API key:       (generated; in the file below, not printed without a terminal");
  }, 15 * 60_000);
});
