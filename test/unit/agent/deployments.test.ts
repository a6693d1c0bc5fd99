// The simulator's deployment logic on one virtual device, with an injected clock and random
// source: the install walk and its delays, failures with a message, reports until
// acknowledged, removals, deployments leaving the desired state, upgrades replacing the
// running version, and the fast mode.
import { describe, expect, it } from "vitest";
import type { DesiredDeploymentEntry } from "../../../agent/src/core/deployments.js";
import { virtualDeploymentAgent, type DeploymentAgentOptions } from "../../../src/simulator/virtual-runtime.js";
import { parseDelayRange, parseSimulatorArgs } from "../../../src/simulator/cli.js";
import { FleetSimulator } from "../../../src/simulator/engine.js";

const APP = "11111111-1111-4111-8111-111111111111";
const D1 = "aaaaaaaa-0000-4000-8000-000000000001";
const D2 = "aaaaaaaa-0000-4000-8000-000000000002";
const OTHER_APP = "22222222-2222-4222-8222-222222222222";

function install(deploymentId: string, version = "1.0.0", applicationId = APP): DesiredDeploymentEntry {
  return { deploymentId, action: "install", applicationId, version, profile: { id: "p", type: "compose", components: [] }, parameters: {} };
}
function remove(deploymentId: string, version = "1.0.0", applicationId = APP): DesiredDeploymentEntry {
  return { deploymentId, action: "remove", applicationId, version, profile: { id: "p", type: "compose", components: [] }, parameters: {} };
}

/** A clock the test moves, and a random source that replays `values` (then 0.5). */
function fixture(options: Omit<DeploymentAgentOptions, "now" | "random"> = {}, values: number[] = []) {
  const clock = { t: 1_000_000 };
  const queue = [...values];
  const agent = virtualDeploymentAgent({
    timings: { downloadMs: [2000, 8000], installMs: [1000, 4000], removeMs: [500, 2000] },
    ...options,
    now: () => clock.t,
    random: () => (queue.length ? queue.shift()! : 0.5),
  });
  /** one heartbeat: reports out (acknowledged), desired state in */
  const heartbeat = (desired: DesiredDeploymentEntry[]) => {
    const reports = agent.pendingReports();
    agent.acknowledge(reports);
    agent.apply(desired);
    return reports;
  };
  return { agent, clock, heartbeat, advance: (ms: number) => (clock.t += ms) };
}

describe("install", () => {
  it("walks downloading -> installing -> running with delays drawn from the configured ranges", () => {
    // random: failure dice 0.9 (no failure), download 0.5 -> 5000 ms, install 0.5 -> 2500 ms
    const { agent, heartbeat, advance } = fixture({ failureRate: 0.05 }, [0.9]);
    expect(heartbeat([install(D1)])).toEqual([]);
    expect(agent.get(D1)).toMatchObject({ state: "downloading", action: "install", version: "1.0.0" });
    expect(agent.busy()).toBe(true);
    expect(agent.nextDueAt()).toBe(1_000_000 + 5000);

    // the next heartbeat reports the download, once
    expect(heartbeat([install(D1)])).toEqual([{ deploymentId: D1, state: "downloading", attempt: 1 }]);
    expect(heartbeat([install(D1)])).toEqual([]);

    advance(4999);
    expect(agent.pendingReports()).toEqual([]);
    advance(1);
    expect(heartbeat([install(D1)])).toEqual([{ deploymentId: D1, state: "installing", attempt: 1 }]);
    advance(2500);
    expect(heartbeat([install(D1)])).toEqual([{ deploymentId: D1, state: "running", attempt: 1 }]);
    expect(agent.busy()).toBe(false);
    expect(heartbeat([install(D1)])).toEqual([]);
    expect(agent.get(D1)!.history).toEqual(["downloading", "installing", "running"]);
    expect(agent.counts()).toMatchObject({ running: 1, downloading: 0 });
  });

  it("scales the delays with timeScale, and takes several steps at once when the clock jumped", () => {
    const { agent, heartbeat, advance } = fixture({ timeScale: 0.01 }, [0.9, 0, 1]); // download 20 ms, install 40 ms
    heartbeat([install(D1)]);
    expect(agent.nextDueAt()).toBe(1_000_000 + 20);
    advance(60);
    // only the current state is reported: the service keeps the last report of a deployment anyway
    expect(heartbeat([install(D1)])).toEqual([{ deploymentId: D1, state: "running", attempt: 1 }]);
    expect(agent.get(D1)!.history).toEqual(["downloading", "installing", "running"]);
  });

  it("timeScale 0 runs an install at once (the fast mode of benchmarks)", () => {
    const { agent, heartbeat } = fixture({ timeScale: 0 });
    heartbeat([install(D1)]);
    expect(agent.get(D1)!.state).toBe("running");
    expect(agent.busy()).toBe(true); // running is not reported yet
    expect(heartbeat([install(D1)])).toEqual([{ deploymentId: D1, state: "running", attempt: 1 }]);
    expect(agent.busy()).toBe(false);
  });

  it("fails at the configured rate, in the download or the install step, with a message", () => {
    // failure dice 0.01 < 0.05: fails; phase dice 0.2 < 0.5: download
    const download = fixture({ failureRate: 0.05 }, [0.01, 0.2]);
    download.heartbeat([install(D1)]);
    download.advance(10_000);
    const [report] = download.heartbeat([install(D1)]);
    expect(report).toMatchObject({ deploymentId: D1, state: "failed" });
    expect(report.message).toMatch(/^download failed: .*\(simulated\)$/);
    expect(download.agent.get(D1)!.history).toEqual(["downloading", "failed"]);
    expect(download.agent.busy()).toBe(false);

    // phase dice 0.7: install
    const inst = fixture({ failureRate: 0.05 }, [0.01, 0.7]);
    inst.heartbeat([install(D1)]);
    inst.advance(20_000);
    const [failed] = inst.heartbeat([install(D1)]);
    expect(failed.state).toBe("failed");
    expect(failed.message).toMatch(/^install failed: /);
    expect(inst.agent.get(D1)!.history).toEqual(["downloading", "installing", "failed"]);
  });

  it("never fails with rate 0 and always fails with rate 1", () => {
    const never = fixture({ failureRate: 0, timeScale: 0 }, [0]);
    never.heartbeat([install(D1)]);
    expect(never.agent.get(D1)!.state).toBe("running");
    const always = fixture({ failureRate: 1, timeScale: 0 }, [0.999]);
    always.heartbeat([install(D1)]);
    expect(always.agent.get(D1)!.state).toBe("failed");
  });

  it("keeps a report until a heartbeat carrying it succeeded", () => {
    const { agent, advance } = fixture({ timeScale: 0.001 });
    agent.apply([install(D1)]);
    const first = agent.pendingReports();
    expect(first).toEqual([{ deploymentId: D1, state: "downloading", attempt: 1 }]);
    // that heartbeat failed: nothing acknowledged, the state goes out again (now further along)
    advance(100);
    expect(agent.pendingReports()).toEqual([{ deploymentId: D1, state: "running", attempt: 1 }]);
    agent.acknowledge(agent.pendingReports());
    expect(agent.pendingReports()).toEqual([]);
  });

  it("does not start an install twice when the desired state repeats it", () => {
    const { agent, heartbeat, advance } = fixture({}, [0.9]);
    heartbeat([install(D1)]);
    const due = agent.nextDueAt();
    advance(1000);
    heartbeat([install(D1)]);
    expect(agent.nextDueAt()).toBe(due);
    expect(agent.list()).toHaveLength(1);
  });

  it("runs deployments of different applications side by side", () => {
    const { agent, heartbeat } = fixture({ timeScale: 0 });
    heartbeat([install(D1), install(D2, "3.0.0", OTHER_APP)]);
    expect(agent.list().map((d) => [d.deploymentId, d.state])).toEqual([[D1, "running"], [D2, "running"]]);
  });
});

describe("desired state changes", () => {
  it("a new install of the same application replaces the old one (upgrade, rollback)", () => {
    const { agent, heartbeat, advance } = fixture({ timeScale: 0.001 });
    heartbeat([install(D1, "1.0.0")]);
    advance(100);
    heartbeat([install(D1, "1.0.0")]);
    expect(agent.get(D1)!.state).toBe("running");
    // the service supersedes D1 in the same answer that brings D2; both in one answer also replaces
    heartbeat([install(D1, "1.0.0"), install(D2, "1.1.0")]);
    expect(agent.get(D1)).toBeUndefined();
    expect(agent.get(D2)).toMatchObject({ version: "1.1.0", state: "downloading" });
    advance(100);
    expect(heartbeat([install(D2, "1.1.0")])).toEqual([{ deploymentId: D2, state: "running", attempt: 1 }]);
  });

  it("a new revision under the same deployment and attempt (an in-place upgrade) is installed; the same revision again is not", () => {
    const { agent, heartbeat, advance } = fixture({ timeScale: 0.001 });
    heartbeat([install(D1, "1.0.0")]);
    advance(100);
    heartbeat([install(D1, "1.0.0")]);
    expect(agent.get(D1)!.state).toBe("running");
    heartbeat([install(D1, "1.1.0")]);
    expect(agent.get(D1)).toMatchObject({ version: "1.1.0", state: "downloading", attempt: 1 });
    expect(agent.list()).toHaveLength(1);
    advance(100);
    expect(heartbeat([install(D1, "1.1.0")])).toEqual([{ deploymentId: D1, state: "running", attempt: 1 }]);
    // new parameter values of the same version are a new revision too
    heartbeat([{ ...install(D1, "1.1.0"), parameters: { gateway: { MODE: "safe" } } }]);
    expect(agent.get(D1)).toMatchObject({ version: "1.1.0", state: "downloading" });
    advance(100);
    heartbeat([{ ...install(D1, "1.1.0"), parameters: { gateway: { MODE: "safe" } } }]);
    heartbeat([{ ...install(D1, "1.1.0"), parameters: { gateway: { MODE: "safe" } } }]);
    expect(agent.get(D1)!.state).toBe("running");
  });

  it("another parametersHash (a device variable changed) re-creates the deployment in place; its first arrival does not", () => {
    const { agent, heartbeat, advance } = fixture({ timeScale: 0.001 });
    heartbeat([install(D1, "1.0.0")]);
    advance(100);
    heartbeat([install(D1, "1.0.0")]);
    expect(agent.get(D1)!.state).toBe("running");
    // a service that starts sending hashes: the same revision, nothing restarted
    heartbeat([{ ...install(D1, "1.0.0"), parametersHash: "a".repeat(64) }]);
    expect(agent.get(D1)!.state).toBe("running");
    // whatever the deployment's parameters look like to the device, another hash installs again
    const changed = { ...install(D1, "1.0.0"), parametersHash: "b".repeat(64) };
    heartbeat([changed]);
    expect(agent.get(D1)).toMatchObject({ version: "1.0.0", state: "downloading", attempt: 1 });
    advance(100);
    expect(heartbeat([changed])).toEqual([{ deploymentId: D1, state: "running", attempt: 1 }]);
    heartbeat([changed]);
    expect(agent.get(D1)!.state).toBe("running");
    // the same hash again: not installed a third time
    expect(agent.get(D1)!.history).toEqual(["downloading", "installing", "running"]);
  });

  it("drops a deployment that left the desired state (cancelled or superseded) without reporting it", () => {
    const { agent, heartbeat } = fixture({}, [0.9]);
    heartbeat([install(D1)]);
    expect(agent.busy()).toBe(true);
    heartbeat([]);
    expect(agent.list()).toEqual([]);
    expect(agent.busy()).toBe(false);
    expect(agent.pendingReports()).toEqual([]);
  });

  it("remove: reports removing, then removed, and forgets the deployment once the service confirmed it", () => {
    const { agent, heartbeat, advance } = fixture({}, [0.9, 0, 0]); // download 2000, install 1000
    heartbeat([install(D1)]);
    advance(3000);
    heartbeat([install(D1)]);
    expect(agent.get(D1)!.state).toBe("running");
    heartbeat([remove(D1)]); // reports running; the answer asks for the removal
    expect(agent.get(D1)).toMatchObject({ action: "remove", state: "removing" });
    expect(agent.nextDueAt()).toBe(agent.get(D1)!.dueAt);
    expect(heartbeat([remove(D1)])).toEqual([{ deploymentId: D1, state: "removing" }]);
    advance(2000);
    expect(heartbeat([remove(D1)])).toEqual([{ deploymentId: D1, state: "removed" }]);
    // confirmed: the service no longer lists it
    expect(heartbeat([])).toEqual([]);
    expect(agent.list()).toEqual([]);
  });

  it("a removal interrupts an install in flight, and a failed install is removed too", () => {
    const { agent, heartbeat, advance } = fixture({ failureRate: 1 }, [0, 0.9]);
    heartbeat([install(D1), install(D2, "1.0.0", OTHER_APP)]); // D1 fails in install; D2 too (rate 1)
    expect(agent.get(D1)!.state).toBe("downloading");
    heartbeat([remove(D1), install(D2, "1.0.0", OTHER_APP)]);
    expect(agent.get(D1)!.state).toBe("removing");
    advance(20_000);
    expect(agent.get(D2)!.state).toBe("downloading"); // not advanced until asked
    const reports = heartbeat([remove(D1), remove(D2, "1.0.0", OTHER_APP)]);
    expect(reports).toEqual([
      { deploymentId: D1, state: "removed" },
      { deploymentId: D2, state: "failed", message: expect.stringMatching(/failed/), attempt: 1 },
    ]);
    expect(agent.get(D2)!.state).toBe("removing");
    expect(agent.get(D1)!.history).toEqual(["downloading", "removing", "removed"]);
  });

  it("confirms the removal of a deployment it does not know (an agent that restarted)", () => {
    const { agent, heartbeat, advance } = fixture({ timeScale: 0.001 });
    heartbeat([remove(D1)]);
    expect(agent.get(D1)!.state).toBe("removing");
    advance(10);
    expect(heartbeat([remove(D1)])).toEqual([{ deploymentId: D1, state: "removed" }]);
  });

  it("a repeated remove does not restart the removal", () => {
    const { agent, heartbeat, advance } = fixture({ timeScale: 0 });
    heartbeat([install(D1)]);
    heartbeat([remove(D1)]);
    expect(agent.get(D1)!.state).toBe("removed");
    advance(5);
    heartbeat([remove(D1)]);
    expect(agent.get(D1)!.history).toEqual(["downloading", "installing", "running", "removing", "removed"]);
  });
});

describe("options", () => {
  it("refuses nonsense", () => {
    expect(() => virtualDeploymentAgent({ failureRate: 2 })).toThrow(/failureRate/);
    expect(() => virtualDeploymentAgent({ timeScale: -1 })).toThrow(/timeScale/);
    expect(() => virtualDeploymentAgent({ timings: { downloadMs: [5, 1] } })).toThrow(/downloadMs/);
  });

  it("parses delay ranges and the deployment flags of the CLI", () => {
    expect(parseDelayRange("2s-8s", "download")).toEqual([2000, 8000]);
    expect(parseDelayRange("2-8s", "download")).toEqual([2000, 8000]);
    expect(parseDelayRange("500ms-2s", "remove")).toEqual([500, 2000]);
    expect(parseDelayRange("3s", "install")).toEqual([3000, 3000]);
    expect(() => parseDelayRange("8s-2s", "download")).toThrow(/upper bound/);
    const base = ["--url", "http://localhost:3000", "--token", "fme_x", "--devices", "5"];
    const defaults = parseSimulatorArgs(base);
    expect(defaults).toMatchObject({
      // about 2 % of heartbeat intervals start a health failure; deployments fail only when asked
      failureRate: 0.02, deploymentFailureRate: 0, timeScale: 1,
      deploymentTimings: { downloadMs: [2000, 8000], installMs: [1000, 4000], removeMs: [500, 2000] },
    });
    expect(parseSimulatorArgs([...base, "--fast", "--deployment-failure-rate", "0.2"])).toMatchObject({ timeScale: 0, deploymentFailureRate: 0.2 });
    expect(parseSimulatorArgs([...base, "--time-scale", "0.1", "--busy-heartbeat", "200ms"])).toMatchObject({ timeScale: 0.1, busyHeartbeatMs: 200 });
    expect(() => parseSimulatorArgs([...base, "--fast", "--time-scale", "1"])).toThrow(/--fast/);
    expect(defaults.seed).toBeUndefined();
    expect(parseSimulatorArgs([...base, "--seed", "42", "--fail-install", "mqtt-broker@5.0.2", "--failing-device", "sim-000003"]))
      .toMatchObject({ seed: 42, failInstalls: ["mqtt-broker@5.0.2"], failingDevices: ["sim-000003"] });
    expect(() => parseSimulatorArgs([...base, "--seed", "x"])).toThrow(/--seed/);
    expect(() => parseSimulatorArgs([...base, "--fail-install", "mqtt-broker"])).toThrow(/--fail-install.*<application>@<version>/);
    // devices with RAUC whose system updates roll back (docs/os-updates.md): each device gets its own system
    expect(defaults.systemUpdates).toBeUndefined();
    expect(parseSimulatorArgs([...base, "--system-updates", "rollback"])).toMatchObject({ systemUpdates: "rollback" });
    expect(() => parseSimulatorArgs([...base, "--system-updates", "maybe"])).toThrow("--system-updates: commit or rollback");
    const withRauc = new FleetSimulator({ ...defaults, systemUpdates: "commit" });
    expect(withRauc.devices.map((d) => [d.facts().rauc, d.system?.report().bootedSlot])).toEqual(Array(5).fill([true, "A"]));
    expect(new FleetSimulator(defaults).devices[0].system).toBeUndefined();
    // one token: no round robin; several (one per time zone): devices enroll with each in turn
    expect(defaults.enrollmentTokens).toBeUndefined();
    const zoned = parseSimulatorArgs([...base, "--token", "fme_y", "--token", "fme_z"]);
    expect(zoned).toMatchObject({ enrollmentToken: "fme_x", enrollmentTokens: ["fme_x", "fme_y", "fme_z"] });
    const simulator = new FleetSimulator({ ...zoned, devices: 4 });
    expect([0, 1, 2, 3].map((n) => simulator.enrollmentTokenOf(n))).toEqual(["fme_x", "fme_y", "fme_z", "fme_x"]);
  });
});

describe("maintenance windows and retries", () => {
  it("download-only: downloads, then waits without installing until the window opens", () => {
    const { agent, heartbeat, advance } = fixture({ failureRate: 0 });
    heartbeat([{ ...install(D1), window: "download-only" }]);
    advance(60_000);
    expect(heartbeat([{ ...install(D1), window: "download-only" }])).toEqual([{ deploymentId: D1, state: "downloading", attempt: 1 }]);
    advance(60_000);
    agent.advance();
    expect(agent.get(D1)).toMatchObject({ state: "downloading", downloaded: true });
    expect(agent.pendingReports()).toEqual([]);
    heartbeat([{ ...install(D1), window: "open" }]);
    expect(agent.get(D1)).toMatchObject({ state: "installing" });
    advance(60_000);
    expect(heartbeat([{ ...install(D1), window: "open" }])).toEqual([{ deploymentId: D1, state: "running", attempt: 1 }]);
  });

  it("closed: does nothing yet, not even the download", () => {
    const { agent, heartbeat } = fixture();
    heartbeat([{ ...install(D1), window: "closed" }]);
    expect(agent.get(D1)).toBeUndefined();
  });

  it("a failed attempt is installed again when a higher attempt arrives, drawing its own failure: it succeeds on the retry", () => {
    // attempt 1: failure dice 0.01 (< 0.5: fails), phase 0.9 (install); attempt 2: dice 0.9 (succeeds)
    const { agent, heartbeat, advance } = fixture({ failureRate: 0.5, timeScale: 0 }, [0.01, 0.9, 0.5, 0.5, 0.5, 0.9]);
    heartbeat([install(D1)]);
    expect(agent.get(D1)).toMatchObject({ state: "failed", attempt: 1 });
    expect(heartbeat([install(D1)])).toEqual([{ deploymentId: D1, state: "failed", message: expect.stringMatching(/install failed/), attempt: 1 }]);
    // the same attempt again changes nothing
    heartbeat([install(D1)]);
    expect(agent.get(D1)).toMatchObject({ state: "failed", attempt: 1 });
    heartbeat([{ ...install(D1), attempt: 2 }]);
    advance(1);
    expect(agent.get(D1)).toMatchObject({ state: "running", attempt: 2 });
    expect(heartbeat([{ ...install(D1), attempt: 2 }])).toEqual([{ deploymentId: D1, state: "running", attempt: 2 }]);
  });
});

describe("deliberate and seeded failures", () => {
  const withComponent = (deploymentId: string, name: string, version: string): DesiredDeploymentEntry => ({
    ...install(deploymentId, version, name === "mqtt-broker" ? APP : OTHER_APP), profile: { id: "p", type: "compose", components: [{ name, properties: {} }] },
  });

  it("failInstalls fails every attempt of the named application version, with a message saying it is on purpose; others run", () => {
    const { agent, heartbeat } = fixture({ failureRate: 0, timeScale: 0, failInstalls: ["mqtt-broker@5.0.2"] });
    heartbeat([withComponent(D1, "mqtt-broker", "5.0.2"), withComponent(D2, "vision-gateway", "5.0.2")]);
    expect(agent.get(D1)).toMatchObject({
      state: "failed", message: "install failed: mqtt-broker@5.0.2 does not start on this device (simulated on purpose: --fail-install mqtt-broker@5.0.2)",
    });
    expect(agent.get(D2)?.state).toBe("running");
    // an automatic retry (a higher attempt) fails the same way
    heartbeat([{ ...withComponent(D1, "mqtt-broker", "5.0.2"), attempt: 2 }, withComponent(D2, "vision-gateway", "5.0.2")]);
    expect(agent.get(D1)).toMatchObject({ state: "failed", attempt: 2, history: ["downloading", "installing", "failed"] });
    // another version of the same application is not named: it runs
    const other = fixture({ failureRate: 0, timeScale: 0, failInstalls: ["mqtt-broker@5.0.2"] });
    other.heartbeat([withComponent(D1, "mqtt-broker", "5.0.3")]);
    expect(other.agent.get(D1)?.state).toBe("running");
  });

  it("the same seed fails the same installs on the same devices, whatever the order devices are driven in", () => {
    const failedWith = (seed: number, order: number[]) => {
      const simulator = new FleetSimulator({
        url: "http://127.0.0.1:9", enrollmentToken: "fme_x", devices: 20, heartbeatMs: 1000, telemetryMs: 0,
        failureRate: 0, deploymentFailureRate: 0.3, timeScale: 0, seed, idPrefix: "seeded",
      });
      simulator.client.close();
      for (const i of order) simulator.devices[i].deployments.apply([install(D1)]);
      return simulator.devices.filter((d) => d.deployments.get(D1)?.state === "failed").map((d) => d.reportedDeviceId);
    };
    const forward = [...Array(20).keys()];
    const first = failedWith(7, forward);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(20);
    expect(failedWith(7, [...forward].reverse())).toEqual(first);
    expect(failedWith(8, forward)).not.toEqual(first);
  });

  it("failingDevices report error from the first heartbeat and never recover; the others roll seeded dice", () => {
    const simulator = new FleetSimulator({
      url: "http://127.0.0.1:9", enrollmentToken: "fme_x", devices: 3, heartbeatMs: 1000, telemetryMs: 0,
      failureRate: 0, seed: 1, idPrefix: "demo", failingDevices: ["demo-000002"],
    });
    simulator.client.close();
    expect(simulator.devices.map((d) => d.failing)).toEqual([false, true, false]);
    for (let i = 0; i < 50; i++) for (const d of simulator.devices) d.updateHealth(0);
    expect(simulator.devices.map((d) => d.failing)).toEqual([false, true, false]);
  });
});

describe("a lease on the device holds installs and removals (docs/actions.md, \"not now\")", () => {
  /** an agent running D1 (installed without failures) */
  const runningD1 = () => {
    const f = fixture({ failureRate: 0 });
    f.heartbeat([install(D1)]);
    f.advance(60_000);
    f.heartbeat([install(D1)]);
    f.advance(60_000);
    f.agent.advance();
    expect(f.agent.get(D1)).toMatchObject({ state: "running" });
    return f;
  };

  it("downloads, then waits saying who holds it until when; the first heartbeat after the lease installs", () => {
    const { agent, heartbeat, advance } = fixture({ failureRate: 0 });
    const held = { by: "forklift", until: "2026-12-07T12:00:00.000Z" };
    agent.holdInstalls(held);
    heartbeat([install(D1)]);
    advance(60_000);
    agent.advance();
    expect(agent.get(D1)).toMatchObject({ state: "downloading", downloaded: true });
    expect(heartbeat([install(D1)])).toEqual([{ deploymentId: D1, state: "downloading", attempt: 1, message: "install deferred by a lease of forklift until 2026-12-07T12:00:00.000Z" }]);
    // still held: nothing new to say
    expect(heartbeat([install(D1)])).toEqual([]);
    expect(agent.get(D1)).toMatchObject({ state: "downloading" });
    agent.holdInstalls(null);
    heartbeat([install(D1)]);
    expect(agent.get(D1)).toMatchObject({ state: "installing" });
    advance(60_000);
    expect(heartbeat([install(D1)])).toEqual([{ deploymentId: D1, state: "running", attempt: 1 }]);
  });

  it("an upgrade waits too", () => {
    const { agent, heartbeat, advance } = runningD1();
    agent.holdInstalls({ by: "robot-arm", until: "2026-12-07T12:30:00.000Z" });
    heartbeat([install(D2, "2.0.0")]);
    advance(60_000);
    agent.advance();
    expect(agent.get(D2)).toMatchObject({ state: "downloading", downloaded: true, message: "install deferred by a lease of robot-arm until 2026-12-07T12:30:00.000Z" });
  });

  it("a removal (an operator's stop) waits too: the application keeps running, the device says why; it is removed after the lease", () => {
    const { agent, heartbeat, advance } = runningD1();
    agent.holdInstalls({ by: "forklift", until: "2026-12-07T12:30:00.000Z" });
    heartbeat([remove(D1)]);
    expect(agent.get(D1)).toMatchObject({ state: "running", message: "removal deferred by a lease of forklift until 2026-12-07T12:30:00.000Z" });
    expect(heartbeat([remove(D1)])).toEqual([{ deploymentId: D1, state: "running", attempt: 1, message: "removal deferred by a lease of forklift until 2026-12-07T12:30:00.000Z" }]);
    advance(60_000);
    expect(heartbeat([remove(D1)])).toEqual([]);
    expect(agent.get(D1)).toMatchObject({ state: "running" });
    agent.holdInstalls(null);
    heartbeat([remove(D1)]);
    expect(agent.get(D1)).toMatchObject({ action: "remove", state: "removing", message: undefined });
    expect(heartbeat([remove(D1)])).toEqual([{ deploymentId: D1, state: "removing" }]);
    advance(60_000);
    expect(heartbeat([remove(D1)])).toEqual([{ deploymentId: D1, state: "removed" }]);
  });
});
