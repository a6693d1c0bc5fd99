// The agent's command line on bad input (agent/bin/fleet-agent.js, the sources as `npx
// fleet-agent` runs them in a clone): a clear message and exit code, never a half-applied state.
// An unreachable service at enrollment stores no identity; a corrupted state file stops `run`
// before anything starts, naming the file; a machine not enrolled is told how to enroll.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../../support/oci-registry.js";
import { AGENT_BIN } from "../../support/agent-lab.js";

const run = promisify(execFile);

/** Runs fleet-agent; its exit code and what it printed on stderr. */
async function fleetAgent(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await run(process.execPath, [AGENT_BIN, ...args], { timeout: 60_000 });
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-agent-cli-"));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("fleet-agent on bad input", { timeout: 60_000 }, () => {
  it("an unreachable service: enroll says so (exit 1) and stores no key, certificate or identity", async () => {
    const port = await freePort(); // nothing listens there
    const { code, stderr } = await fleetAgent(["enroll", "--url", `http://127.0.0.1:${port}`, "--token", "fme_x", "--state-dir", dir]);
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`^fleet-agent: the service at http://127\\.0\\.0\\.1:${port} cannot be reached \\(.*ECONNREFUSED.*\\); nothing was enrolled or stored\\n$`));
    expect(fs.readdirSync(dir).filter((f) => /identity|\.key$|\.crt$|\.pem$/.test(f))).toEqual([]);
    // run afterwards says the machine is not enrolled
    const after = await fleetAgent(["run", "--state-dir", dir]);
    expect(after).toEqual({ code: 1, stderr: `fleet-agent: this device is not enrolled (no ${dir}/identity.json): run fleet-agent enroll --url URL --token TOKEN\n` });
  });

  it("a corrupted state file stops run before anything starts, naming the file; it is left as it was", async () => {
    fs.writeFileSync(path.join(dir, "identity.json"), '{"deviceId": "3f6c', { mode: 0o600 });
    const { code, stderr } = await fleetAgent(["run", "--state-dir", dir]);
    expect(code).toBe(1);
    expect(stderr).toBe(`fleet-agent: ${dir}/identity.json is corrupted (not JSON); restore it from a backup, or remove the state directory and enroll again\n`);
    expect(fs.readFileSync(path.join(dir, "identity.json"), "utf8")).toBe('{"deviceId": "3f6c');
    expect(fs.readdirSync(dir)).toEqual(["identity.json"]);
  });

  it("a second enrollment of an enrolled machine is refused without --force; usage errors exit 2", async () => {
    fs.writeFileSync(path.join(dir, "identity.json"), "{}");
    const again = await fleetAgent(["enroll", "--url", "http://127.0.0.1:1", "--token", "fme_x", "--state-dir", dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/this machine is already enrolled .*--force enrolls it again as a new device/);
    const usage = await fleetAgent(["run", "--engine", "lxc", "--state-dir", dir]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^fleet-agent: --engine is podman or docker\n/);
  });

  it("os-update: a bundle without an http(s) URL or a sha256 is a usage error naming the option, and nothing is handed over", async () => {
    const noUrl = await fleetAgent(["os-update", "--url", "ftp://files.example/os.raucb", "--sha256", "a".repeat(64), "--state-dir", dir]);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toMatch(/^fleet-agent: os-update: --url: an http:\/\/ or https:\/\/ URL of the bundle\n/);
    const noDigest = await fleetAgent(["os-update", "--url", "https://files.example/os.raucb", "--sha256", "abc", "--state-dir", dir]);
    expect(noDigest.code).toBe(2);
    expect(noDigest.stderr).toMatch(/^fleet-agent: os-update: --sha256: the bundle's sha256, 64 hex digits\n/);
    expect(fs.existsSync(path.join(dir, "os-update-request.json"))).toBe(false);
  });
});
