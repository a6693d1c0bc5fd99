// The real fleet agent for the remote-access tests of the clients (the CLI's ssh/exec/cp/
// port-forward and the console's terminal against the service): `fleet-agent enroll` with a new
// token of the service's default organization, `fleet-agent run` with a state directory of its
// own and a configuration file whose remoteAccess section runs shells and commands as `nobody`
// (the tests run as root; the default user fleet-remote does not exist on this machine). The
// person who opens sessions is an owner: the bootstrap key holds none of the named-only remote
// permissions (docs/remote-access.md, "Permissions").
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { AGENT_BIN } from "./agent-lab.js";
import type { ConsoleService, User } from "./console-service.js";
import { eventually } from "./server-process.js";

export interface RemoteAgent {
  deviceId: string;
  name: string;
  stateDir: string;
  /** the running `fleet-agent run`, or null after stop/kill */
  child: ChildProcess | null;
  /** what the running agent printed */
  output: string[];
  /** `fleet-agent run` again, with the same state (after a kill) */
  start(): ChildProcess;
  /** SIGTERM (or the signal given) and wait until it is gone */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** removes the state directory and configuration (after stop) */
  remove(): void;
}

export type RemoteOperator = User & { token: string };

/** An owner of the default organization, signed in: the owner role names every remote permission. */
export async function remoteOperator(service: ConsoleService): Promise<RemoteOperator> {
  const user = await service.createUser("owner");
  return { ...user, token: await service.bearer(user) };
}

/** Organization settings, Remote access, as `operator` (remote:manage): on, and what else is given. */
export async function turnOnRemoteAccess(service: ConsoleService, operator: RemoteOperator, settings: Record<string, unknown> = {}): Promise<void> {
  await service.call("PUT", "/api/v1/remote-sessions/settings", { token: operator.token, key: null, body: { enabled: true, ...settings } });
}

const WORK = "/dev/shm/fleet-tests";

/**
 * Enrolls a device named `name` and runs its agent until the service says it is online.
 * `remoteAccess`: the lines of the configuration file's remoteAccess section (indented by two).
 */
export async function startRemoteAgent(service: ConsoleService, name: string, remoteAccess = "  user: nobody\n", env: Record<string, string> = {}): Promise<RemoteAgent> {
  fs.mkdirSync(WORK, { recursive: true });
  const dir = fs.mkdtempSync(path.join(WORK, `remote-agent-${name}-`));
  const config = path.join(dir, "config.yaml");
  fs.writeFileSync(config, `remoteAccess:\n${remoteAccess}`);
  const stateDir = path.join(dir, "state");
  const existing = await service.call<{ total: number }>("GET", "/api/v1/ca-certificates?limit=1");
  if (existing.total === 0) await service.call("POST", "/api/v1/ca-certificates/generate", { body: { name: "remote-ca", commonName: "remote CA" } });
  const { token } = await service.call<{ token: string }>("POST", "/api/v1/enrollment-tokens", { body: { name: `${name} device`, maxUses: 1 } });
  const agentEnv = { ...process.env, ...env, FLEET_AGENT_CONFIG: config, FLEET_AGENT_STATE_DIR: stateDir };
  const enroll = spawn(process.execPath, [AGENT_BIN, "enroll", "--url", service.url, "--token", token, "--name", name, "--device-id", `${name}-${randomBytes(4).toString("hex")}`], { env: agentEnv, stdio: ["ignore", "pipe", "pipe"] });
  let printed = "";
  for (const stream of [enroll.stdout!, enroll.stderr!]) stream.on("data", (c: Buffer) => (printed += c.toString()));
  const code = await new Promise((resolve) => enroll.once("exit", resolve));
  if (code !== 0) throw new Error(`fleet-agent enroll exited ${code}: ${printed}`);
  const deviceId = (JSON.parse(fs.readFileSync(path.join(stateDir, "identity.json"), "utf8")) as { deviceId: string }).deviceId;

  const agent: RemoteAgent = {
    deviceId,
    name,
    stateDir,
    child: null,
    output: [],
    start() {
      const child = spawn(process.execPath, [AGENT_BIN, "run"], { env: agentEnv, stdio: ["ignore", "pipe", "pipe"] });
      for (const stream of [child.stdout, child.stderr]) stream.on("data", (c: Buffer) => agent.output.push(...c.toString("utf8").split("\n").filter(Boolean)));
      agent.child = child;
      return child;
    },
    async stop(signal = "SIGTERM") {
      const child = agent.child;
      agent.child = null;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill(signal);
      await exited;
    },
    remove() {
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  agent.start();
  await eventually(async () => (await service.call<{ status: string }>("GET", `/api/v1/devices/${deviceId}`)).status === "online", 60_000, `${name} online`);
  return agent;
}

/** The device's current certificate's id (for a revocation). */
export async function currentCertificateId(service: ConsoleService, deviceId: string): Promise<string> {
  const { items } = await service.call<{ items: { id: string; revoked: boolean }[] }>("GET", `/api/v1/devices/${deviceId}/certificates`);
  const current = items.find((c) => !c.revoked);
  if (!current) throw new Error(`device ${deviceId} has no certificate`);
  return current.id;
}
