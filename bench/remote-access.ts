// Remote access (issue 47, docs/remote-access.md): the figures the issue asks for, measured with
// the service as `npm start` runs it in its own process (bench/support/serve.ts), the REAL agent's
// remote module on the device side (agent/src/remote/remote-access.ts, one RemoteAccess per
// device, in this process) and the CLI's client code on the user's side (cli/src/remote/session.ts).
// Runs on PGlite and on a throwaway PostgreSQL (or BENCH_DATABASE_URL). Prints figures; asserts nothing.
//
// * session start: POST /remote-sessions (a shell) to the first byte of the shell's output (its
//   prompt), p50/p95, with the long-poll and with the heartbeat's remoteAccess.pending alone
//   (the agent's fallback when its wait is answered 404/409: it then holds no long-poll);
// * keystroke echo: one byte typed in a shell to its echo, p50/p95;
// * throughput (MB/s) of exec output, a file read and a port forward, each beside a direct
//   loopback TCP copy of the same size in the same run, with the service's CPU per GB relayed;
// * the service's memory per idle long-poll and per open idle session (after a full collection:
//   live objects, V8 heap + external, and RSS, which moves by whole MiB), and how many sessions it
//   holds open at once (ramped in steps up to a ceiling, or until the first error).
//
//   npm run bench -- remote-access
//   BENCH_DB=both|pglite|postgres  BENCH_DATABASE_URL=postgresql://...
//   BENCH_REMOTE_SESSIONS=20 (session starts with the long-poll)  BENCH_REMOTE_FALLBACK_SESSIONS=6
//   BENCH_REMOTE_HEARTBEAT_SECONDS=5 (the fallback's heartbeat interval; the agent's default is the service's 30 s)
//   BENCH_REMOTE_KEYSTROKES=200  BENCH_REMOTE_MB=100 (each transfer)  BENCH_REMOTE_WAITS=1000 (long-polls held at once)  BENCH_REMOTE_WAIT_DEVICES=100 (by this many devices)
//   BENCH_PROFILE=<dir> (the service's CPU profile of each transfer)
//   BENCH_REMOTE_CEILING=500 (the ramp's ceiling)  BENCH_REMOTE_STEP=100
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { once } from "node:events";
import { FleetSimulator } from "../src/simulator/engine.js";
import type { VirtualDevice } from "../src/simulator/virtual-device.js";
import { RemoteAccess } from "../agent/src/remote/remote-access.js";
import { defaultRemoteAccess } from "../agent/src/remote/config.js";
import { ApiClient } from "../cli/src/client.js";
import { openSession, openSessionStream, readStatus, type OpenInput, type RemoteStream } from "../cli/src/remote/session.js";
import { CHANNEL, type Frame } from "../cli/src/remote/framing.js";
import { REMOTE_NAMED_PERMISSIONS } from "../src/trpc/permissions.js";
import { fmtMs, machineLine } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";
import { cpuMicrosUsed, cpuOf, startChild, type Child } from "./support/child.js";

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const STARTS = num("BENCH_REMOTE_SESSIONS", 20);
const FALLBACK_STARTS = num("BENCH_REMOTE_FALLBACK_SESSIONS", 6);
const HEARTBEAT_SECONDS = num("BENCH_REMOTE_HEARTBEAT_SECONDS", 5);
const KEYSTROKES = num("BENCH_REMOTE_KEYSTROKES", 200);
const MB = num("BENCH_REMOTE_MB", 100);
const WAITS = num("BENCH_REMOTE_WAITS", 1000);
/** the devices holding those waits, round robin (enrolling is the slow part of setting up) */
const WAIT_DEVICES = Math.min(WAITS, num("BENCH_REMOTE_WAIT_DEVICES", 100));
const CEILING = num("BENCH_REMOTE_CEILING", 500);
const STEP = num("BENCH_REMOTE_STEP", 100);
/** the largest per-user and per-device limits the settings take */
const PER_LIMIT = 100;
/** a directory: the service's CPU profile of each transfer goes there (npx tsx bench/support/profile-summary.ts FILE) */
const PROFILE = process.env.BENCH_PROFILE;
const ADMIN_KEY = "fm_bench" + "R".repeat(36);
const BYTES = MB * 1024 * 1024;

const pct = (samples: number[], p: number) => {
  const s = [...samples].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : NaN;
};
const p50p95 = (samples: number[]) => `p50 ${fmtMs(pct(samples, 50))}, p95 ${fmtMs(pct(samples, 95))} (n=${samples.length})`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number) => bytes / 1024 / 1024;
const kib = (bytes: number) => (bytes / 1024).toFixed(1);

/** Resident memory of a process (VmRSS), bytes. */
function rssOf(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
}

interface Memory {
  /** resident memory (VmRSS) */
  rss: number;
  /** what live JavaScript objects and the buffers they hold take (V8 heap used + external) */
  live: number;
}

/**
 * The service's memory once it settled: after a full collection (it runs with --expose-gc), the
 * lowest of a few samples a second apart. RSS alone moves by whole MiB as the allocator keeps or
 * returns pages; `live` is what a session or a wait really holds.
 */
async function settledMemory(service: Child, samples = 3): Promise<Memory> {
  const low = { rss: Infinity, live: Infinity };
  for (let i = 0; i < samples; i++) {
    await sleep(1000);
    const answer = await service.command("gc");
    low.rss = Math.min(low.rss, rssOf(service.process.pid!));
    low.live = Math.min(low.live, answer.memory.heapUsed + answer.memory.external);
  }
  return low;
}

/** A TCP server on the device's loopback sending `bytes` to each connection, or holding it idle (bytes 0). */
async function tcpSource(bytes: number): Promise<{ port: number; connections: () => number; close: () => void }> {
  const chunk = crypto.randomBytes(64 * 1024);
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
    if (bytes === 0) return;
    let left = bytes;
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!socket.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void socket.once("drain", pump);
      }
      socket.end();
    };
    pump();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** The direct loopback copy: `bytes` from a TCP server to a client in this process; MB/s from the first byte to the last. */
async function directCopy(bytes: number): Promise<number> {
  const source = await tcpSource(bytes);
  try {
    const socket = net.connect(source.port, "127.0.0.1");
    let got = 0;
    let first = 0;
    socket.on("data", (c: Buffer) => {
      if (!first) first = performance.now();
      got += c.length;
    });
    await once(socket, "end");
    return mib(got) / ((performance.now() - first) / 1000);
  } finally {
    source.close();
  }
}

interface Org {
  orgId: string;
  /** one API client per user (the per-user session limit is 100) */
  users: ApiClient[];
}

const clientOf = (server: string, apiKey: string) => new ApiClient({ server, apiKey });

/** An organization with remote access on, `users` owners with a key each that names the remote permissions. */
async function setUp(url: string, users: number): Promise<Org> {
  const admin = clientOf(url, ADMIN_KEY);
  const org = await admin.request<{ id: string }>("POST", "/organizations", { body: { name: `Bench Remote ${crypto.randomBytes(3).toString("hex")}` } });
  const roles = await admin.request<{ items: { id: string; name: string; organizationId: string | null }[] }>("GET", "/roles", { query: { limit: 100 } });
  const owner = roles.items.find((r) => r.name === "owner" && !r.organizationId)!;
  const clients: ApiClient[] = [];
  for (let i = 0; i < users; i++) {
    const email = `bench-remote-${i}-${org.id.slice(0, 8)}@example.test`;
    const password = "bench-password-123";
    const user = await admin.request<{ id: string }>("POST", "/users", { body: { email, name: `Remote ${i}`, password } });
    await admin.request("POST", `/users/${user.id}/organizations`, { body: { organizationId: org.id, roleId: owner.id } });
    const login = await new ApiClient({ server: url }).request<{ accessToken: string }>("POST", "/auth/login", { body: { email, password } });
    const asUser = new ApiClient({ server: url, accessToken: login.accessToken });
    const key = await asUser.request<{ key: string }>("POST", `/organizations/${org.id}/api-keys`, { body: { name: "bench", permissions: ["*", ...REMOTE_NAMED_PERMISSIONS] } });
    clients.push(clientOf(url, key.key));
  }
  await clients[0].request("PUT", "/remote-sessions/settings", {
    body: { enabled: true, maxSessionsPerUser: PER_LIMIT, maxSessionsPerDevice: PER_LIMIT, idleTimeoutSeconds: 3600, joinTimeoutSeconds: 60 },
  });
  return { orgId: org.id, users: clients };
}

/** The agent's remote module for one device, as `fleet-agent run` builds it (sessions as `nobody` when this runs as root). */
function agentFor(url: string, device: VirtualDevice): RemoteAccess {
  const config = defaultRemoteAccess();
  if (process.getuid?.() === 0) config.user = "nobody";
  return new RemoteAccess({ serviceUrl: url, authorization: () => device.authorization(), config, state: null, log: () => undefined });
}

/** The user's side of one session: the CLI's open and stream, with what arrives counted. */
class UserSide {
  stream!: RemoteStream;
  bytes = 0;
  /** data messages received (channels 1 and 2) */
  messages = 0;
  firstByteAt = 0;
  lastByteAt = 0;
  exitCode: number | null = null;
  error: string | null = null;
  text = "";
  keepText = false;
  private waiters: Array<() => void> = [];

  static async open(client: ApiClient, input: OpenInput): Promise<{ side: UserSide; sessionId: string }> {
    const side = new UserSide();
    const opened = await openSession(client, input);
    side.stream = await openSessionStream(client, opened, (frame) => side.onFrame(frame));
    void side.stream.closed.then(() => side.notify());
    return { side, sessionId: opened.session.id };
  }

  private onFrame(frame: Frame) {
    if (frame.channel === CHANNEL.stdout || frame.channel === CHANNEL.stderr) {
      const now = performance.now();
      if (!this.firstByteAt) this.firstByteAt = now;
      this.lastByteAt = now;
      this.bytes += frame.payload.length;
      this.messages++;
      if (this.keepText) this.text += frame.payload.toString("latin1");
    } else {
      const status = readStatus(frame);
      if (status?.exitCode !== undefined) this.exitCode = status.exitCode;
      if (status?.error) this.error = status.error;
    }
    this.notify();
  }

  private notify() {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Waits until `done` holds; rejects when the stream closes before. */
  async until(done: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (!this.stream.open) throw new Error(`the stream closed before ${what}${this.error ? ` (${this.error})` : ""}`);
      if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms`);
      await Promise.race([new Promise<void>((r) => this.waiters.push(r)), sleep(1000)]);
    }
  }

  async close() {
    this.stream.close(1000);
    await Promise.race([this.stream.closed, sleep(5000)]);
  }
}

/** POST /remote-sessions (a shell) to the first byte of its output; the shell is then left with exit. */
async function sessionStart(client: ApiClient, deviceId: string): Promise<number> {
  const t0 = performance.now();
  const { side } = await UserSide.open(client, { deviceId, kind: "shell", reason: "bench", cols: 80, rows: 24 });
  await side.until(() => side.firstByteAt > 0, "the prompt");
  const ms = side.firstByteAt - t0;
  side.stream.send(CHANNEL.stdin, "exit\n");
  await Promise.race([side.stream.closed, sleep(5000)]);
  await side.close();
  return ms;
}

/** One byte typed in a shell to its echo; then a backspace to its echo ("\b \b"): both are round trips. */
async function keystrokes(client: ApiClient, deviceId: string): Promise<number[]> {
  const { side } = await UserSide.open(client, { deviceId, kind: "shell", reason: "bench", cols: 80, rows: 24 });
  side.keepText = true;
  await side.until(() => side.firstByteAt > 0, "the prompt");
  await sleep(500); // the rest of the prompt
  const samples: number[] = [];
  for (let i = 0; i < KEYSTROKES; i++) {
    const key = i % 2 === 0 ? "x" : "\x7f";
    const expected = i % 2 === 0 ? "x" : "\b";
    side.text = "";
    const t0 = performance.now();
    side.stream.send(CHANNEL.stdin, key);
    await side.until(() => side.text.includes(expected), "the echo");
    samples.push(performance.now() - t0);
    if (i % 2 === 1) await side.until(() => side.text.includes("\b \b") || side.text.includes("\x1b[K") || side.text.length >= 3, "the erase", 2000).catch(() => undefined);
  }
  side.stream.send(CHANNEL.stdin, "\x15exit\n");
  await Promise.race([side.stream.closed, sleep(5000)]);
  await side.close();
  return samples;
}

interface Transfer {
  what: string;
  mbPerSecond: number;
  directMbPerSecond: number;
  serviceCpuSecondsPerGb: number;
  bytes: number;
  messages: number;
}

/** One transfer from the device through the service; its rate beside a direct loopback copy of the same size, measured next to it. */
async function transfer(service: Child, what: string, client: ApiClient, input: OpenInput, done: (side: UserSide) => boolean): Promise<Transfer> {
  const cpuBefore = await cpuOf(service);
  if (PROFILE) service.process.kill("SIGUSR2"); // the service's CPU profile of this transfer (bench/support/serve.ts)
  const { side, sessionId } = await UserSide.open(client, input);
  await side.until(() => done(side), `the end of ${what}`, 600_000);
  const cpuAfter = await cpuOf(service);
  if (PROFILE) service.process.kill("SIGUSR2");
  await side.close();
  // a port-forward session outlives its streams: ended here, as `fleet port-forward` does at its end
  if (input.kind === "port-forward") await client.request("POST", `/remote-sessions/${sessionId}/close`);
  const seconds = (side.lastByteAt - side.firstByteAt) / 1000;
  const mbPerSecond = mib(side.bytes) / seconds;
  const directMbPerSecond = await directCopy(side.bytes);
  const serviceCpuSecondsPerGb = cpuMicrosUsed(cpuBefore, cpuAfter) / 1e6 / (side.bytes / 1024 ** 3);
  console.log(
    `${what.padEnd(34)} ${mbPerSecond.toFixed(1).padStart(7)} MB/s through the service; direct loopback TCP ${directMbPerSecond.toFixed(0)} MB/s ` +
    `(${((mbPerSecond / directMbPerSecond) * 100).toFixed(1)} %); service CPU ${serviceCpuSecondsPerGb.toFixed(2)} s per GiB relayed (${mib(side.bytes).toFixed(0)} MiB in ${side.messages} messages of ${(side.bytes / side.messages / 1024).toFixed(1)} KiB on average)`,
  );
  return { what, mbPerSecond, directMbPerSecond, serviceCpuSecondsPerGb, bytes: side.bytes, messages: side.messages };
}

/** WAITS long-polls held at once by `devices` (raw GETs, as the agent sends them); the service's RSS per held wait. */
async function idleWaits(url: string, service: Child, devices: VirtualDevice[]): Promise<{ waits: number; perWait: Memory; answeredEarly: number }> {
  const tokens = await Promise.all(devices.map((d) => d.authorization()));
  const authorizations = Array.from({ length: WAITS }, (_, i) => tokens[i % tokens.length]);
  const before = await settledMemory(service);
  const target = new URL("/api/v1/agent/remote/wait", url);
  let answeredEarly = 0;
  const requests = authorizations.map((authorization) => {
    const req = http.request(target, { method: "GET", agent: false, headers: { authorization } }, (res) => {
      answeredEarly++;
      res.resume();
    });
    req.on("error", () => undefined);
    req.end();
    return req;
  });
  // every request sent and taken by the service (its CPU settles once the waits block)
  await sleep(3000);
  const held = await settledMemory(service);
  for (const req of requests) req.destroy();
  await sleep(1000);
  const waits = requests.length - answeredEarly;
  const per = (key: keyof Memory) => (held[key] - before[key]) / Math.max(1, waits);
  return { waits, perWait: { rss: per("rss"), live: per("live") }, answeredEarly };
}

interface Ramp {
  held: number;
  stoppedBy: string;
  perIdleSession: Memory;
  steps: { sessions: number; memory: Memory; idleCpuPercent: number }[];
  opensPerSecond: number;
}

/**
 * Idle sessions held open at once: port-forward sessions (no process on the device; a TCP
 * connection to an idle server there), the real agent joining each, opened in steps of STEP
 * until CEILING or the first error. The service's RSS and idle CPU at each step.
 */
async function ramp(service: Child, org: Org, devices: VirtualDevice[], agents: RemoteAccess[]): Promise<Ramp> {
  const idleServer = await tcpSource(0);
  const sides: UserSide[] = [];
  const steps: Ramp["steps"] = [];
  let stoppedBy = `the ceiling (${CEILING}, BENCH_REMOTE_CEILING)`;
  steps.push({ sessions: 0, memory: await settledMemory(service), idleCpuPercent: NaN });
  let openSeconds = 0;
  try {
    outer: while (sides.length < CEILING) {
      const goal = Math.min(CEILING, sides.length + STEP);
      const t0 = performance.now();
      // 8 at a time: an operator's sessions arrive one by one; this is about holding, not opening
      const errors: string[] = [];
      let next = sides.length;
      await Promise.all(Array.from({ length: 8 }, async () => {
        while (next < goal && errors.length === 0) {
          const i = next++;
          // round robin over the users and devices: one user's opens are serialized by the service (its limit's lock)
          const client = org.users[1 + (i % devices.length)];
          const device = devices[i % devices.length];
          try {
            const { side } = await UserSide.open(client, { deviceId: device.deviceId!, kind: "port-forward", reason: "bench", target: { host: "127.0.0.1", port: idleServer.port } });
            sides.push(side);
          } catch (error) {
            errors.push(`session ${i + 1}: ${(error as Error).message}`);
          }
        }
      }));
      // every device leg joined: the idle server accepted the agent's connection for each
      const deadline = Date.now() + 60_000;
      while (idleServer.connections() < sides.length && Date.now() < deadline) await sleep(200);
      openSeconds += (performance.now() - t0) / 1000;
      const lost = sides.filter((s) => !s.stream.open).length;
      if (errors.length || lost || idleServer.connections() < sides.length) {
        stoppedBy = errors[0] ?? (lost ? `${lost} stream(s) closed (${sides.find((s) => !s.stream.open)?.error ?? "no reason given"})` : `${sides.length - idleServer.connections()} device leg(s) did not join within 60 s`);
        break outer;
      }
      const memory = await settledMemory(service);
      const cpuBefore = await cpuOf(service);
      await sleep(5000);
      const idleCpuPercent = (cpuMicrosUsed(cpuBefore, await cpuOf(service)) / 5e6) * 100;
      steps.push({ sessions: sides.length, memory, idleCpuPercent });
      console.log(`  ${String(sides.length).padStart(5)} sessions open: service RSS ${mib(memory.rss).toFixed(0)} MiB, live objects ${mib(memory.live).toFixed(1)} MiB, idle CPU ${idleCpuPercent.toFixed(1)} % of a core; agents serving ${agents.reduce((n, a) => n + a.active, 0)}`);
    }
  } finally {
    await Promise.all(sides.map((s) => s.close()));
    idleServer.close();
  }
  // the slope from the first step to the last: memory the first step leaves (garbage of earlier phases kept in pages) is no session's
  const from = steps.length > 2 ? steps[1] : steps[0];
  const to = steps[steps.length - 1];
  const per = (key: keyof Memory) => (to.sessions > from.sessions ? (to.memory[key] - from.memory[key]) / (to.sessions - from.sessions) : NaN);
  return {
    held: steps[steps.length - 1].sessions,
    stoppedBy,
    perIdleSession: { rss: per("rss"), live: per("live") },
    steps,
    opensPerSecond: sides.length / Math.max(openSeconds, 1e-9),
  };
}

async function run(database: string, databaseUrl?: string) {
  console.log(`\n== ${database}`);
  const service = await startChild("serve.ts", { BENCH_ADMIN_KEY: ADMIN_KEY, ...(databaseUrl ? { BENCH_DATABASE: databaseUrl } : {}) }, undefined, ["--expose-gc"]);
  const url = service.info.url as string;
  const agents: RemoteAccess[] = [];
  const heartbeats = { stop: false, done: Promise.resolve() };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-bench-remote-"));
  const figures: Record<string, unknown> = { database };
  try {
    const capacityDevices = Math.ceil(CEILING / PER_LIMIT);
    // user 0 opens the measured sessions; users 1.. the ramp's (the limits count live sessions per user)
    const org = await setUp(url, 1 + capacityDevices);
    const user = org.users[0];
    await user.request("POST", "/ca-certificates/generate", { body: { name: "bench-ca", commonName: "Bench CA" } });
    const token = await user.request<{ token: string }>("POST", "/enrollment-tokens", { body: { name: "bench", labels: { bench: "remote" } } });
    // devices 0 and 1: the long-poll and the fallback; 2..: the capacity ramp; all: the idle waits
    const simulator = new FleetSimulator({ url, enrollmentToken: token.token, devices: Math.max(2 + WAIT_DEVICES, 2 + capacityDevices), heartbeatMs: 30_000, telemetryMs: 0, failureRate: 0, enrollConcurrency: 16, maxSockets: 16 });
    const t0 = performance.now();
    await simulator.enrollAll();
    const devices = simulator.devices.filter((d) => d.deviceId);
    console.log(`enrolled ${devices.length} devices in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    if (devices.length < 2 + capacityDevices) throw new Error(`too few devices enrolled: ${simulator.stats().lastError}`);
    for (const d of devices.slice(0, 2 + capacityDevices)) await d.heartbeat(true);

    // --- session start with the long-poll: the agent holds GET /agent/remote/wait
    const polling = agentFor(url, devices[0]);
    agents.push(polling);
    await polling.start();
    polling.onHeartbeat({ enabled: true });
    await sleep(1000);
    await sessionStart(user, devices[0].deviceId!); // warm-up: the first shell, JIT
    const starts: number[] = [];
    for (let i = 0; i < STARTS; i++) starts.push(await sessionStart(user, devices[0].deviceId!));
    console.log(`session start (POST to the shell's first byte), long-poll: ${p50p95(starts)}`);

    // --- the fallback: no long-poll, the heartbeat's remoteAccess.pending every HEARTBEAT_SECONDS
    const fallback = agentFor(url, devices[1]);
    agents.push(fallback);
    await fallback.start();
    heartbeats.done = (async () => {
      while (!heartbeats.stop) {
        const res = await devices[1].heartbeat().catch(() => null);
        // the agent as it is after its wait was answered 404 or 409: it serves the heartbeat's offers and holds no wait
        if (res?.status === 200) fallback.onHeartbeat({ pending: res.body.remoteAccess?.pending });
        await sleep(HEARTBEAT_SECONDS * 1000);
      }
    })();
    const fallbackStarts: number[] = [];
    for (let i = 0; i < FALLBACK_STARTS; i++) {
      // at a random moment of the heartbeat's period: one right after the last would always wait a whole period
      await sleep(Math.random() * HEARTBEAT_SECONDS * 1000);
      fallbackStarts.push(await sessionStart(user, devices[1].deviceId!));
    }
    heartbeats.stop = true;
    console.log(`session start, heartbeat fallback (heartbeat every ${HEARTBEAT_SECONDS} s, no long-poll): ${p50p95(fallbackStarts)}`);

    // --- keystroke echo
    const echoes = await keystrokes(user, devices[0].deviceId!);
    console.log(`keystroke echo in a shell (byte typed to its echo, through service and pty): ${p50p95(echoes)}`);

    // --- throughput
    const file = path.join(tmp, "payload.bin");
    const chunk = crypto.randomBytes(1024 * 1024);
    const fd = fs.openSync(file, "w");
    for (let i = 0; i < MB; i++) fs.writeSync(fd, chunk);
    fs.closeSync(fd);
    const source = await tcpSource(BYTES);
    const d0 = devices[0].deviceId!;
    const transfers = [
      await transfer(service, `exec: head -c ${MB}M /dev/zero`, user, { deviceId: d0, kind: "exec", reason: "bench", command: ["head", "-c", `${MB}M`, "/dev/zero"] }, (s) => s.exitCode !== null && s.bytes >= BYTES),
      await transfer(service, `file-read of a ${MB} MiB file`, user, { deviceId: d0, kind: "file-read", reason: "bench", path: file }, (s) => s.bytes >= BYTES),
      await transfer(service, `port-forward, ${MB} MiB from a TCP server`, user, { deviceId: d0, kind: "port-forward", reason: "bench", target: { host: "127.0.0.1", port: source.port } }, (s) => s.bytes >= BYTES),
    ];
    source.close();
    fs.rmSync(file);

    // --- memory per idle long-poll (the two agents' own waits aside)
    await polling.stop();
    await fallback.stop();
    const waiting = await idleWaits(url, service, devices.slice(2, 2 + WAIT_DEVICES));
    console.log(`idle long-polls: ${waiting.waits} held at once by ${WAIT_DEVICES} devices; per held wait: service RSS ${kib(waiting.perWait.rss)} KiB, live objects ${kib(waiting.perWait.live)} KiB` + (waiting.answeredEarly ? ` (${waiting.answeredEarly} answered before the measurement)` : ""));

    // --- sessions held at once, and memory per open idle session
    console.log(`sessions held open (port-forward to an idle TCP server on the device, the real agent joining each; ${PER_LIMIT} per user and device, ${capacityDevices} users and devices):`);
    const capacityAgents = devices.slice(2, 2 + capacityDevices).map((d) => agentFor(url, d));
    agents.push(...capacityAgents);
    for (const a of capacityAgents) {
      await a.start();
      a.onHeartbeat({ enabled: true });
    }
    const held = await ramp(service, org, devices.slice(2, 2 + capacityDevices), capacityAgents);
    console.log(`held ${held.held} sessions at once (stopped by ${held.stoppedBy}); per open idle session (from ${Math.min(STEP, held.held)} to ${held.held} sessions): service RSS ${kib(held.perIdleSession.rss)} KiB, live objects ${kib(held.perIdleSession.live)} KiB; opened ${held.opensPerSecond.toFixed(1)} sessions/s (8 at a time, device joined)`);
    await simulator.stop();
    Object.assign(figures, {
      sessionStartLongPollMs: { p50: pct(starts, 50), p95: pct(starts, 95) },
      sessionStartHeartbeatMs: { heartbeatSeconds: HEARTBEAT_SECONDS, p50: pct(fallbackStarts, 50), p95: pct(fallbackStarts, 95) },
      keystrokeEchoMs: { p50: pct(echoes, 50), p95: pct(echoes, 95) },
      transfers: transfers.map((t) => ({ what: t.what, mbPerSecond: +t.mbPerSecond.toFixed(1), directMbPerSecond: +t.directMbPerSecond.toFixed(0), serviceCpuSecondsPerGiB: +t.serviceCpuSecondsPerGb.toFixed(2), kibPerMessage: +(t.bytes / t.messages / 1024).toFixed(1) })),
      idleWaits: { waits: waiting.waits, rssKiBPerWait: +kib(waiting.perWait.rss), liveKiBPerWait: +kib(waiting.perWait.live) },
      sessions: {
        held: held.held, stoppedBy: held.stoppedBy, rssKiBPerIdleSession: +kib(held.perIdleSession.rss), liveKiBPerIdleSession: +kib(held.perIdleSession.live), opensPerSecond: +held.opensPerSecond.toFixed(1),
        steps: held.steps.map((s) => ({ sessions: s.sessions, rssMiB: +mib(s.memory.rss).toFixed(0), liveMiB: +mib(s.memory.live).toFixed(1), idleCpuPercent: +s.idleCpuPercent.toFixed(1) })),
      },
    });
  } finally {
    heartbeats.stop = true;
    await heartbeats.done;
    await Promise.all(agents.map((a) => a.stop()));
    fs.rmSync(tmp, { recursive: true, force: true });
    await service.stop();
  }
  return figures;
}

console.log(machineLine());
console.log(`settings: ${STARTS} session starts with the long-poll, ${FALLBACK_STARTS} with the heartbeat fallback (every ${HEARTBEAT_SECONDS} s), ${KEYSTROKES} keystrokes, ${MB} MiB per transfer, ${WAITS} idle long-polls (${WAIT_DEVICES} devices), sessions ramped by ${STEP} to ${CEILING}`);
const results = await onEachDatabase(run);
console.log("\nsummary (JSON):");
console.log(JSON.stringify(results, null, 2));
process.exit(0);
