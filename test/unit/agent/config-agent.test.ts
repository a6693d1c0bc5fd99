// The agent's configuration loop (agent/src/config/configuration.ts) on real files: a revision
// from the heartbeat's answer applied and reported, the activation of the layers whose files
// changed (a command that records its run into a file, run without a shell), a failing
// activation failing the revision with its exit, a path outside the roots failing it with the
// previous revision kept, drift of a file changed or removed by hand reported, and restored on
// an answer with restore: true.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigurationAgent } from "../../../agent/src/config/configuration.js";
import type { ConfigurationAnswer, ConfigFileEntry } from "../../../agent/src/config/types.js";
import { StateDir } from "../../../agent/src/state-dir.js";

const BASE = "/dev/shm/fleet-tests";
const CHILD = path.join(import.meta.dirname, "support", "config-activation-child.ts");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const file = (p: string, content: string, layer: string): ConfigFileEntry =>
  ({ path: p, contentBase64: Buffer.from(content).toString("base64"), sha256: sha(content), mode: "0644", layer });

function fixture() {
  fs.mkdirSync(BASE, { recursive: true });
  const dir = fs.mkdtempSync(path.join(BASE, "agent-config-loop-"));
  dirs.push(dir);
  const root = `${dir}/etc/fleet/`;
  const ranLog = path.join(dir, "activations.log");
  const state = new StateDir(path.join(dir, "state"));
  state.ensure();
  const lines: string[] = [];
  let wakes = 0;
  const make = (activationTimeoutMs = 5000) => new ConfigurationAgent({
    state, settings: { roots: [root], driftIntervalMs: 1000, activationTimeoutMs },
    log: (level, message) => lines.push(`${level}: ${message}`), wake: () => wakes++,
  });
  /** argv recording its run (and its arguments, unexpanded) into ranLog */
  const recorder = (name: string, ...extra: string[]) =>
    [process.execPath, "-e", "require('fs').appendFileSync(process.argv[1], process.argv.slice(2).join(' ') + '\\n')", ranLog, name, ...extra];
  const ran = () => (fs.existsSync(ranLog) ? fs.readFileSync(ranLog, "utf8").trim().split("\n") : []);
  /** one heartbeat: the report due goes out and is taken, the answer comes in and its work is done */
  const heartbeat = async (agent: ConfigurationAgent, answer?: ConfigurationAnswer) => {
    const report = agent.pendingReport();
    agent.acknowledge(report);
    agent.apply(answer);
    await agent.idle();
    return report;
  };
  return { dir, root, state, lines, make, recorder, ran, heartbeat, wakes: () => wakes };
}

describe("configuration on the device", () => {
  it("applies a revision, activates the layers whose files changed, and reports it applied", async () => {
    const { root, make, recorder, ran, heartbeat } = fixture();
    const agent = make();
    agent.start();
    expect(agent.pendingReport()).toBeUndefined(); // nothing to say before any configuration
    const r1: ConfigurationAnswer = {
      revision: "a".repeat(64), full: true, vars: { MQTT_URL: "mqtts://broker" },
      files: [file(`${root}mqtt.conf`, "url=mqtts://broker\n", "mosquitto"), file(`${root}ntp.conf`, "server 10.0.0.1\n", "site")],
      activations: [
        { layer: "mosquitto", command: recorder("mosquitto", "$(touch /tmp/x)", "a b"), paths: [`${root}mqtt.conf`] },
        { layer: "ntp", command: recorder("ntp"), paths: [`${root}ntp.conf`] },
        { layer: "unrelated", command: recorder("unrelated"), paths: [`${root}other.conf`] },
      ],
    };
    await heartbeat(agent, r1);
    expect(fs.readFileSync(`${root}mqtt.conf`, "utf8")).toBe("url=mqtts://broker\n");
    // argv, no shell: "$(touch /tmp/x)" is an argument as written
    expect(ran()).toEqual(["mosquitto $(touch /tmp/x) a b", "ntp"]);
    expect(await heartbeat(agent, { revision: r1.revision, full: false })).toEqual({ revision: r1.revision, state: "applied", appliedRevision: r1.revision, drift: [] });

    // r2 changes only ntp.conf: only its layer is activated
    const r2 = { ...r1, revision: "b".repeat(64), files: [r1.files![0], file(`${root}ntp.conf`, "server 10.0.0.2\n", "site")] };
    await heartbeat(agent, r2);
    expect(ran()).toEqual(["mosquitto $(touch /tmp/x) a b", "ntp", "ntp"]);
    // the same revision again (full or not): nothing runs again, nothing to report until the 10th heartbeat
    expect(await heartbeat(agent, r2)).toMatchObject({ revision: r2.revision, state: "applied" });
    for (let i = 0; i < 9; i++) expect(await heartbeat(agent, { revision: r2.revision, full: false })).toBeUndefined();
    expect(await heartbeat(agent, r2)).toMatchObject({ revision: r2.revision, state: "applied" });
    expect(ran()).toHaveLength(3);

    // a device whose configuration state was reset says so when answered "already applied", and takes the full answer at once
    const reset = fixture();
    const fresh = reset.make();
    fresh.start();
    await reset.heartbeat(fresh, { revision: r2.revision, full: false });
    expect(fresh.pendingReport()).toMatchObject({ revision: r2.revision, state: "failed", message: expect.stringContaining("needs the full configuration") });
    await reset.heartbeat(fresh, { ...r2, files: [file(`${reset.root}ntp.conf`, "server 10.0.0.2\n", "site")], activations: [] });
    expect(fresh.pendingReport()).toEqual({ revision: r2.revision, state: "applied", appliedRevision: r2.revision, drift: [] });

    // a restart reports once, from what is on disk
    const again = make();
    again.start();
    expect(await heartbeat(again, r2)).toEqual({ revision: r2.revision, state: "applied", appliedRevision: r2.revision, drift: [] });
    expect(ran()).toHaveLength(3);
  });

  it("fails a revision with the activation's exit, or its timeout, and one with a path outside the roots keeping the previous revision", async () => {
    const { dir, root, make, recorder, ran, heartbeat, lines } = fixture();
    const agent = make();
    agent.start();
    const r1: ConfigurationAnswer = { revision: "1".repeat(64), full: true, files: [file(`${root}app.conf`, "v=1\n", "app")], activations: [] };
    await heartbeat(agent, r1);
    const failing: ConfigurationAnswer = {
      revision: "2".repeat(64), full: true, files: [file(`${root}app.conf`, "v=2\n", "app")],
      activations: [{ layer: "app", command: [process.execPath, "-e", "console.error('bad config'); process.exit(3)"], paths: [`${root}app.conf`] }],
    };
    await heartbeat(agent, failing);
    const report = agent.pendingReport()!;
    expect(report).toMatchObject({ revision: failing.revision, state: "failed", appliedRevision: r1.revision });
    expect(report.message).toContain("activation of layer app");
    expect(report.message).toContain("exited with 3: bad config");
    expect(fs.readFileSync(`${root}app.conf`, "utf8")).toBe("v=2\n"); // the files stay
    expect(lines.some((l) => l.startsWith("warn: configuration revision 222222222222 failed"))).toBe(true);
    agent.acknowledge(report);

    // a command that does not exist, and one that outlives its timeout
    const missing = { ...failing, revision: "3".repeat(64), files: [file(`${root}app.conf`, "v=3\n", "app")], activations: [{ layer: "app", command: [`${dir}/no-such-command`], paths: [`${root}app.conf`] }] };
    await heartbeat(agent, missing);
    expect(agent.pendingReport()!.message).toContain(`(${dir}/no-such-command) cannot be run (ENOENT)`);

    const outside: ConfigurationAnswer = {
      revision: "4".repeat(64), full: true,
      files: [file(`${root}app.conf`, "v=4\n", "app"), file(`${root}../passwd`, "root::0:0\n", "evil")],
      activations: [{ layer: "app", command: recorder("app"), paths: [`${root}app.conf`] }],
    };
    await heartbeat(agent, outside);
    const refused = agent.pendingReport()!;
    expect(refused).toMatchObject({ revision: outside.revision, state: "failed", appliedRevision: "3".repeat(64) });
    expect(refused.message).toContain(`${root}../passwd is refused`);
    expect(fs.readFileSync(`${root}app.conf`, "utf8")).toBe("v=3\n");
    expect(fs.existsSync(`${dir}/etc/passwd`)).toBe(false);
    expect(ran()).toEqual([]);
    // a full answer without its file list removes nothing
    await heartbeat(agent, { revision: "6".repeat(64), full: true });
    expect(agent.pendingReport()).toMatchObject({ state: "failed", appliedRevision: "3".repeat(64), message: expect.stringContaining("carries no file list") });
    expect(fs.readFileSync(`${root}app.conf`, "utf8")).toBe("v=3\n");

    // a command that outlives its timeout is stopped
    const impatient = make(500);
    impatient.start();
    const slow = { ...failing, revision: "5".repeat(64), files: [file(`${root}app.conf`, "v=5\n", "app")], activations: [{ layer: "app", command: ["sleep", "30"], paths: [`${root}app.conf`] }] };
    await heartbeat(impatient, slow);
    expect(impatient.pendingReport()!.message).toContain("activation of layer app (sleep 30) did not finish within 0.5 s and was stopped");
  });

  it("reports drift of a file changed or removed by hand, and restores them on restore: true", async () => {
    const { root, make, recorder, ran, heartbeat } = fixture();
    const agent = make();
    agent.start();
    const r1: ConfigurationAnswer = {
      revision: "d".repeat(64), full: true,
      files: [file(`${root}a.conf`, "a=1\n", "one"), file(`${root}b.conf`, "b=1\n", "two"), file(`${root}c.conf`, "c=1\n", "three")],
      activations: [{ layer: "one", command: recorder("one"), paths: [`${root}a.conf`] }, { layer: "two", command: recorder("two"), paths: [`${root}b.conf`] }, { layer: "three", command: recorder("three"), paths: [`${root}c.conf`] }],
    };
    await heartbeat(agent, r1);
    agent.acknowledge(agent.pendingReport());
    await agent.checkDrift();
    expect(agent.pendingReport()).toBeUndefined(); // nothing drifted: nothing new to say

    fs.writeFileSync(`${root}a.conf`, "a=edited by hand\n");
    fs.rmSync(`${root}b.conf`);
    await agent.checkDrift();
    expect(await heartbeat(agent, r1)).toEqual({
      revision: r1.revision, state: "applied", appliedRevision: r1.revision,
      // the changed file's content goes with it (the operator may accept it as an override); a removed one has none
      drift: [{ path: `${root}a.conf`, sha256: sha("a=edited by hand\n"), contentBase64: Buffer.from("a=edited by hand\n").toString("base64") }, { path: `${root}b.conf` }],
    });
    expect(JSON.stringify(agent.status())).not.toContain("contentBase64"); // read for the report, never kept in the state

    // the operator restores: the drifted files are rewritten and their layers activated, the others not
    await heartbeat(agent, { ...r1, restore: true });
    expect(fs.readFileSync(`${root}a.conf`, "utf8")).toBe("a=1\n");
    expect(fs.readFileSync(`${root}b.conf`, "utf8")).toBe("b=1\n");
    expect(ran()).toEqual(["one", "two", "three", "one", "two"]);
    expect(agent.pendingReport()).toEqual({ revision: r1.revision, state: "applied", appliedRevision: r1.revision, drift: [] });
    await agent.checkDrift();
    expect(agent.status()).toMatchObject({ state: "applied", files: 3, drift: [] });
  });

  it("reports a drifted file's content only up to 128 KiB, and only while it has the digest the check found", async () => {
    const { root, make, heartbeat } = fixture();
    const agent = make();
    agent.start();
    const r1: ConfigurationAnswer = { revision: "e".repeat(64), full: true, files: [file(`${root}small.conf`, "s=1\n", "one"), file(`${root}big.bin`, "b=1\n", "one")] };
    await heartbeat(agent, r1);
    const big = Buffer.alloc(128 * 1024 + 1, 0x61);
    fs.writeFileSync(`${root}big.bin`, big);
    fs.writeFileSync(`${root}small.conf`, "s=2\n");
    await agent.checkDrift();
    fs.writeFileSync(`${root}small.conf`, "s=3\n"); // edited again after the check: its content waits for the next one
    expect((await heartbeat(agent, r1))?.drift).toEqual([
      { path: `${root}small.conf`, sha256: sha("s=2\n") },
      { path: `${root}big.bin`, sha256: createHash("sha256").update(big).digest("hex") },
    ]);
    await agent.checkDrift();
    expect((await heartbeat(agent, r1))?.drift?.[0]).toEqual({ path: `${root}small.conf`, sha256: sha("s=3\n"), contentBase64: Buffer.from("s=3\n").toString("base64") });
    // exactly the limit still goes
    const limit = Buffer.alloc(128 * 1024, 0x62);
    fs.writeFileSync(`${root}big.bin`, limit);
    await agent.checkDrift();
    expect((await heartbeat(agent, r1))?.drift?.[1]).toEqual({ path: `${root}big.bin`, sha256: createHash("sha256").update(limit).digest("hex"), contentBase64: limit.toString("base64") });
  });

  it("kill -9 while a revision's activation runs: the next start runs it again and then reports the revision applied", { timeout: 120_000 }, async () => {
    const { dir, root, state, make, ran, heartbeat } = fixture();
    const first = path.join(dir, "first-run-pid");
    // records its run; the first run then stays (as a slow reload would) until the test kills the agent
    const activation = [process.execPath, "-e", [
      "const fs = require('fs'); fs.appendFileSync(process.argv[1], 'reload\\n');",
      "if (!fs.existsSync(process.argv[2])) { fs.writeFileSync(process.argv[2], String(process.pid)); setInterval(() => {}, 1000); }",
    ].join(" "), path.join(dir, "activations.log"), first];
    const answer: ConfigurationAnswer = { revision: "e".repeat(64), full: true, files: [file(`${root}app.conf`, "v=1\n", "app")], activations: [{ layer: "app", command: activation, paths: [`${root}app.conf`] }] };
    const specFile = path.join(dir, "spec.json");
    fs.writeFileSync(specFile, JSON.stringify({ stateDir: state.dir, roots: [root], answer }));
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, specFile], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    // the activation began (it wrote its pid): the agent is in the middle of the revision
    while (child.exitCode === null && (!fs.existsSync(first) || !fs.readFileSync(first, "utf8"))) await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    process.kill(Number(fs.readFileSync(first, "utf8")), "SIGKILL"); // the activation itself outlives the agent
    expect(out).not.toContain("done");
    expect(fs.readFileSync(`${root}app.conf`, "utf8")).toBe("v=1\n");
    expect(ran()).toEqual(["reload"]);

    const restarted = make();
    restarted.start();
    await restarted.idle();
    expect(ran()).toEqual(["reload", "reload"]);
    expect(await heartbeat(restarted, answer)).toEqual({ revision: answer.revision, state: "applied", appliedRevision: answer.revision, drift: [] });
    expect(ran()).toHaveLength(2); // taken as applied: the answer runs nothing again
    expect(fs.existsSync(state.path("config/activating.json"))).toBe(false);
  });
});
