// Device configuration with the real agent against the service on loopback (issue 48,
// docs/configuration.md): `fleet-agent run` as the systemd unit runs it, its allowed root a
// directory of this test (FLEET_AGENT_CONFIG_ROOTS). An organization layer's file set is
// written with its mode, its activation runs (a command that records its run into a file), the
// device reports the revision applied and the service shows it in sync; a file changed by hand
// is reported as drift and restored by the operator; a new revision without the file removes it from the device; a file
// outside the roots the agent reported is refused when written, naming the device (its own
// refusal of such a file: test/unit/agent/config-files.test.ts).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AGENT_BIN } from "../support/agent-lab.js";
import { startConsoleService, type ConsoleService } from "../support/console-service.js";
import { startRemoteAgent, type RemoteAgent } from "../support/remote-agent.js";
import { eventually } from "../support/server-process.js";

const WORK = "/dev/shm/fleet-tests";
const sha = (text: string) => createHash("sha256").update(text).digest("hex");

interface Effective {
  revision: string;
  inSync: boolean;
  files: Array<{ path: string; layer: string; sha256: string | null }>;
  reported: { revision: string | null; state: string | null; message: string | null; appliedRevision: string | null; drift: Array<{ path: string; sha256: string | null }> } | null;
}

describe("configuration with the real agent", { timeout: 240_000 }, () => {
  let service: ConsoleService;
  let agent: RemoteAgent;
  let dir = "";
  let root = "";
  let layerId = "";
  let recorded = "";

  const effective = () => service.call<Effective>("GET", `/api/v1/config-layers/effective?deviceId=${agent.deviceId}`);
  /** the effective view once the device reported its current revision in the given state */
  const reportedAs = (state: string, check: (e: Effective) => boolean = () => true) => eventually(async () => {
    const e = await effective();
    return e.reported?.revision === e.revision && e.reported.state === state && check(e) ? e : undefined;
  }, 60_000, `the device reports its configuration ${state}`);
  const runs = () => (fs.existsSync(recorded) ? fs.readFileSync(recorded, "utf8").trim().split("\n") : []);

  beforeEach(({ onTestFailed }) => onTestFailed(() => console.error(`fleet-agent printed:\n${agent?.output.slice(-40).join("\n")}`)));

  beforeAll(async () => {
    fs.mkdirSync(WORK, { recursive: true });
    dir = fs.mkdtempSync(path.join(WORK, "config-e2e-"));
    root = path.join(dir, "etc", "fleet");
    recorded = path.join(dir, "activations.log");
    service = await startConsoleService({ HEARTBEAT_INTERVAL_SECONDS: "5" });
    agent = await startRemoteAgent(service, "config-gw", "  user: nobody\n", { FLEET_AGENT_CONFIG_ROOTS: `${root}/`, FLEET_AGENT_DRIFT_INTERVAL_SECONDS: "1" });
  }, 240_000);
  afterAll(async () => {
    await agent?.stop();
    agent?.remove();
    await service?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("writes the layer's files, runs its activation, and the service shows the revision applied", async () => {
    const layer = await service.call<{ id: string }>("POST", "/api/v1/config-layers", {
      body: {
        name: "defaults", kind: "organization",
        variables: { BROKER: "mqtts://{{ device.name }}.broker.example" },
        files: [
          { path: `${root}/mqtt.conf`, content: "url={{ vars.BROKER }}\n", mode: "0640" },
          { path: `${root}/certs/ca.pem`, content: "CA\n", mode: "0644" },
        ],
        activation: { command: [process.execPath, "-e", "require('fs').appendFileSync(process.argv[1], 'reloaded ' + process.argv[2] + '\\n')", recorded, "$BROKER"] },
      },
    });
    layerId = layer.id;
    const e = await reportedAs("applied");
    expect(e).toMatchObject({ inSync: true, reported: { appliedRevision: e.revision, drift: [] } });
    expect(fs.readFileSync(`${root}/mqtt.conf`, "utf8")).toBe("url=mqtts://config-gw.broker.example\n");
    expect(fs.statSync(`${root}/mqtt.conf`).mode & 0o7777).toBe(0o640);
    expect(fs.readFileSync(`${root}/certs/ca.pem`, "utf8")).toBe("CA\n");
    // run once, without a shell ($BROKER is an argument as written)
    expect(runs()).toEqual(["reloaded $BROKER"]);
    // fleet-agent status says which revision is in effect, and which files it owns
    const status = execFileSync(process.execPath, [AGENT_BIN, "status", "--state-dir", agent.stateDir], { encoding: "utf8" });
    expect(JSON.parse(status).configuration).toEqual({
      appliedRevision: e.revision, files: [`${root}/certs/ca.pem`, `${root}/mqtt.conf`], last: { revision: e.revision, state: "applied", drift: [] },
    });
  });

  it("reports a file changed by hand as drift", async () => {
    fs.writeFileSync(`${root}/mqtt.conf`, "url=mqtts://elsewhere\n");
    const e = await reportedAs("applied", (x) => (x.reported?.drift.length ?? 0) > 0);
    expect(e.reported!.drift).toEqual([{ path: `${root}/mqtt.conf`, sha256: sha("url=mqtts://elsewhere\n") }]);
    expect(runs()).toHaveLength(1);
  });

  it("restore: the drifted file is rewritten and its layer activated again; no drift left", async () => {
    await service.call("POST", "/api/v1/config-layers/restore", { body: { deviceId: agent.deviceId } });
    const e = await reportedAs("applied", (x) => x.reported?.drift.length === 0);
    expect(e.inSync).toBe(true);
    expect(fs.readFileSync(`${root}/mqtt.conf`, "utf8")).toBe("url=mqtts://config-gw.broker.example\n");
    expect(runs()).toEqual(["reloaded $BROKER", "reloaded $BROKER"]);
  });

  it("a new revision without a file removes it from the device, and activates again", async () => {
    const before = (await effective()).revision;
    await service.call("PATCH", `/api/v1/config-layers/${layerId}`, { body: { files: [{ path: `${root}/mqtt.conf`, content: "url={{ vars.BROKER }}\nqos=1\n", mode: "0640" }] } });
    const e = await reportedAs("applied", (x) => x.revision !== before);
    expect(e.inSync).toBe(true);
    expect(fs.readFileSync(`${root}/mqtt.conf`, "utf8")).toBe("url=mqtts://config-gw.broker.example\nqos=1\n");
    expect(fs.existsSync(`${root}/certs/ca.pem`)).toBe(false);
    expect(e.reported!.drift).toEqual([]);
    expect(runs()).toEqual(["reloaded $BROKER", "reloaded $BROKER", "reloaded $BROKER"]);
  });

  it("accept: a file changed by hand becomes the device's override; the agent then applies it without rewriting the file", async () => {
    const byHand = "url=mqtts://kept-by-hand\nqos=2\n";
    fs.writeFileSync(`${root}/mqtt.conf`, byHand);
    const inode = fs.statSync(`${root}/mqtt.conf`).ino;
    const drifted = await reportedAs("applied", (x) => (x.reported?.drift.length ?? 0) > 0);
    expect(drifted.reported!.drift).toEqual([{ path: `${root}/mqtt.conf`, sha256: sha(byHand) }]);
    const accepted = await service.call<{ layer: string; created: boolean }>("POST", "/api/v1/config-layers/accept", { body: { deviceId: agent.deviceId } });
    expect(accepted).toMatchObject({ layer: "config-gw-override", created: true, paths: [`${root}/mqtt.conf`] });
    const e = await reportedAs("applied", (x) => x.revision !== drifted.revision && x.reported?.drift.length === 0);
    expect(e.inSync).toBe(true);
    expect(e.files.find((f) => f.path === `${root}/mqtt.conf`)).toMatchObject({ layer: "config-gw-override", sha256: sha(byHand) });
    // the same file, never rewritten (the agent writes by renaming a new file over it), and no activation ran
    expect(fs.readFileSync(`${root}/mqtt.conf`, "utf8")).toBe(byHand);
    expect(fs.statSync(`${root}/mqtt.conf`).ino).toBe(inode);
    expect(runs()).toHaveLength(3);
  });

  it("a file outside the roots the agent reported is refused when written (400 naming the file and the device); nothing reaches the device", async () => {
    const before = await reportedAs("applied");
    const outside = path.join(dir, "elsewhere.conf");
    const refused = await service.api("PATCH", `/api/v1/config-layers/${layerId}`, {
      body: { files: [{ path: `${root}/mqtt.conf`, content: "url=changed\n", mode: "0640" }, { path: outside, content: "x\n", mode: "0644" }] },
    });
    // the agent's heartbeat facts carry its FLEET_AGENT_CONFIG_ROOTS: the service knows them
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.issues).toEqual([expect.objectContaining({ path: ["files", "1", "path"], message: `${outside} is outside the allowed roots of device config-gw: ${root}/ (the agent's FLEET_AGENT_CONFIG_ROOTS)` })]);
    // nothing stored, nothing sent: the device stays in sync on the revision it had, the file never written
    const after = await effective();
    expect(after.revision).toBe(before.revision);
    expect(after.inSync).toBe(true);
    expect(fs.existsSync(outside)).toBe(false);
    expect(fs.readFileSync(`${root}/mqtt.conf`, "utf8")).toBe("url=mqtts://kept-by-hand\nqos=2\n"); // the accepted override
    expect(runs()).toHaveLength(3);
  });
});
