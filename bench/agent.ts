// The fleet agent on a real engine (test/support/agent-lab.ts: the service as `npm start` runs
// it, Podman with runc, a local OCI registry, a Git registry): what an operator sizes a device
// by. Needs podman, podman-compose, busybox-static and docker-registry (the tests' peers).
//
// * time from a deployment's start to `running` on the device, with the image to pull and
//   with the image cached (the service's heartbeat interval is part of it: the agent learns of
//   a new deployment at its next heartbeat);
// * the agent idle with two running projects, over BENCH_AGENT_MINUTES (default 10): resident
//   memory (VmRSS) and CPU of the agent process, and of the engine commands it runs (children);
// * bytes on the wire between the agent and the service in that time, per hour (a TCP proxy
//   counts them), at the defaults: heartbeat 30 s, telemetry 60 s, logs every 30 s.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildAgent } from "../scripts/build-agent.js";
import { startAgentLab } from "../test/support/agent-lab.js";
import { peerAvailable } from "../test/support/peers.js";
import { machineLine } from "./support/machine.js";

if (!peerAvailable("podman") || !peerAvailable("docker-registry")) {
  console.log("bench/agent.ts: skipped (needs podman, podman-compose, busybox-static and docker-registry: apt-get install podman runc podman-compose busybox-static docker-registry)");
  process.exit(0);
}

const minutes = Number(process.env.BENCH_AGENT_MINUTES ?? 10);
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** utime+stime and cutime+cstime of a process, in seconds; VmRSS in bytes */
function usage(pid: number) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const own = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  const children = (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
  return { own, children, rss };
}

console.log(machineLine());
// the agent as a device runs it: the one bundled file of `npm run build:agent`
const buildDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-agent-bench-"));
const { bundlePath, bundleBytes } = await buildAgent({ outDir: buildDir });
console.log(`agent bundle: ${(bundleBytes / 1024).toFixed(0)} KiB`);
const lab = await startAgentLab({ components: 2, heartbeatSeconds: 30, agentProgram: bundlePath });
try {
  await lab.enroll(["--name", "bench-device"]);
  const agent = lab.startAgent();
  // when each line of the agent appeared (its stdout has no timestamps of its own)
  const seen: Array<{ at: number; line: string }> = [];
  agent.stdout!.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) if (line) seen.push({ at: performance.now(), line });
  });
  const lineAt = (test: (line: string) => boolean) => seen.find((s) => test(s.line))?.at;
  const timeToRunning = async (version: string) => {
    const started = performance.now();
    const id = await lab.deploy(version);
    await lab.waitForState(id, "running", 600_000);
    const received = lineAt((l) => l.includes(`: download (deployment ${id})`))!;
    const running = lineAt((l) => l.includes(`${lab.applicationId} ${version} runs`))!;
    return { total: (performance.now() - started) / 1000, onDevice: (running - received) / 1000 };
  };
  const cold = await timeToRunning("1.0.0");
  const warm = await timeToRunning("2.0.0");
  console.log("desired state -> running on the device (2 components: fetch, pull, up, steady 1 s each):");
  console.log(`  images to pull ${cold.onDevice.toFixed(1)} s, images cached ${warm.onDevice.toFixed(1)} s`);
  console.log(`  from the deployment's start, the agent's next heartbeat (30 s) included: ${cold.total.toFixed(1)} s and ${warm.total.toFixed(1)} s`);

  // idle: two projects run; measure the agent alone
  await new Promise((resolve) => setTimeout(resolve, 15_000));
  const before = usage(agent.pid!);
  const bytesBefore = { ...lab.proxy.bytes };
  const loadBefore = os.loadavg()[0];
  let peakRss = before.rss;
  const rssSamples: number[] = [];
  const end = Date.now() + minutes * 60_000;
  while (Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const now = usage(agent.pid!);
    rssSamples.push(now.rss);
    peakRss = Math.max(peakRss, now.rss);
  }
  const after = usage(agent.pid!);
  const seconds = minutes * 60;
  const toAgentPerHour = ((lab.proxy.bytes.fromTarget - bytesBefore.fromTarget) / seconds) * 3600;
  const fromAgentPerHour = ((lab.proxy.bytes.toTarget - bytesBefore.toTarget) / seconds) * 3600;
  const mean = rssSamples.reduce((a, b) => a + b, 0) / Math.max(1, rssSamples.length);
  const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
  console.log(`agent idle with 2 running projects, ${minutes} min (machine load ${loadBefore.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end): RSS mean ${mb(mean)} MB, peak ${mb(peakRss)} MB`);
  console.log(`  CPU time (utime+stime of /proc/<pid>/stat): the agent ${(after.own - before.own).toFixed(2)} s, the engine commands it ran ${(after.children - before.children).toFixed(2)} s in ${seconds} s`);
  console.log(`  CPU: the agent ${(((after.own - before.own) / seconds) * 100).toFixed(2)} % of one core; with the engine commands it ran ${(((after.own - before.own + after.children - before.children) / seconds) * 100).toFixed(2)} %`);
  console.log(`  on the wire: agent -> service ${(fromAgentPerHour / 1024).toFixed(0)} KiB/h, service -> agent ${(toAgentPerHour / 1024).toFixed(0)} KiB/h (HTTP/1.1 keep-alive, no TLS)`);
} finally {
  await lab.close();
  fs.rmSync(buildDir, { recursive: true, force: true });
}
