// fleet-agent: the device side of the fleet management service (docs/agent.md).
//
//   fleet-agent enroll --url URL --token fme_... [--name NAME] [--label k=v ...] [--device-id ID] [--state-dir DIR] [--tpm]
//   fleet-agent run [--state-dir DIR] [--engine podman|docker]
//   fleet-agent status [--state-dir DIR]
//   fleet-agent os-update --url URL --sha256 HEX [--version V] [--health-seconds N] [--state-dir DIR]
//
// Exit codes: 0 done; 1 failed (the message says why); 2 usage; 78 the service refuses this
// device's credentials (enrollment token or certificate): running again cannot help.
import "./memory-mode.js"; // first: V8's memory mode before the rest is loaded
import fs from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import { EXIT_CREDENTIALS_REFUSED, FleetAgent } from "./agent.js";
import { JsonClient } from "./core/json-client.js";
import { DeviceSession, succeeded, TpmChallengeRefused } from "./core/session.js";
import { readFacts } from "./host/facts.js";
import { loadIdentity, storeCredentials } from "./identity-store.js";
import { loadRemoteAccess } from "./remote/config.js";
import { detectEngine } from "./runtime/engine.js";
import { StateDir } from "./state-dir.js";
import { requestOsUpdate, targetProblem, type OsUpdateState, type OsUpdateTarget } from "./os-update/updater.js";
import { Tpm, TpmError } from "./tpm.js";
import { AGENT_VERSION } from "./version.js";

const USAGE = `fleet-agent ${AGENT_VERSION}: runs what the fleet management service deploys to this machine

usage:
  fleet-agent enroll --url URL --token TOKEN [--name NAME] [--label key=value ...] [--device-id ID] [--state-dir DIR] [--tpm]
      enrolls this machine: makes its key (never sent anywhere), sends a certificate request with
      the enrollment token, and keeps key, certificate and CA chain in the state directory;
      --tpm makes the key inside the machine's TPM 2.0 (it never exists in a file), sends the
      TPM's evidence for it, and signs with the TPM from then on (tpm2-tools; TPM2TOOLS_TCTI
      names another TPM than the kernel's /dev/tpmrm0)
  fleet-agent run [--state-dir DIR] [--engine podman|docker] [--config FILE]
      heartbeats, reports facts, telemetry and logs, and runs the deployments it is given
      (what the systemd unit runs)
  fleet-agent status [--state-dir DIR]
      what the state directory says: identity, certificate, deployments, data waiting to be sent
  fleet-agent os-update --url URL --sha256 HEX [--version V] [--health-seconds N] [--state-dir DIR]
      hands the running agent a RAUC bundle to install into the inactive slot: downloaded
      (resumable, its sha256 checked), installed by RAUC, rebooted into, and kept only when the
      health checks pass within --health-seconds (default 300) of its first boot

options:
  --state-dir DIR   default $FLEET_AGENT_STATE_DIR or /var/lib/fleet-agent
  --device-id ID    the hardware identity reported at enrollment (default: /etc/machine-id, else the host name)
  --engine KIND     podman or docker (default: podman if usable, else docker)
  --config FILE     the agent's configuration (remote access switches; default $FLEET_AGENT_CONFIG or
                    /etc/fleet-agent/config.yaml, which may be absent: the defaults)

exit codes: 0 done, 1 failed, 2 usage, ${EXIT_CREDENTIALS_REFUSED} the service refuses this device's credentials`;

class UsageError extends Error {}

function stateDirOf(value: string | undefined): StateDir {
  return new StateDir(value ?? process.env.FLEET_AGENT_STATE_DIR ?? "/var/lib/fleet-agent");
}

function labelsOf(values: string[] | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const value of values ?? []) {
    const at = value.indexOf("=");
    if (at <= 0) throw new UsageError(`--label ${value}: write key=value`);
    labels[value.slice(0, at)] = value.slice(at + 1);
  }
  return labels;
}

function defaultDeviceId(): string {
  try {
    const id = fs.readFileSync("/etc/machine-id", "utf8").trim();
    if (id) return id;
  } catch {
    /* no machine id: the host name */
  }
  return os.hostname();
}

async function enroll(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      url: { type: "string" }, token: { type: "string" }, name: { type: "string" }, label: { type: "string", multiple: true },
      "device-id": { type: "string" }, "state-dir": { type: "string" }, force: { type: "boolean" }, tpm: { type: "boolean" },
    },
  });
  if (!values.url || !values.token) throw new UsageError("enroll needs --url and --token");
  let url: URL;
  try {
    url = new URL(values.url);
  } catch {
    throw new UsageError(`--url ${values.url} is not a URL (https://fleet.example)`);
  }
  const state = stateDirOf(values["state-dir"]);
  if (state.exists("identity.json") && !values.force) {
    throw new Error(`this machine is already enrolled (${state.path("identity.json")}); --force enrolls it again as a new device`);
  }
  state.ensure();
  const reportedDeviceId = values["device-id"] ?? defaultDeviceId();
  const session = new DeviceSession(new JsonClient(url.origin, 2, 60_000));
  if (values.tpm) session.tpm = new Tpm();
  const facts = await readFacts({ agentVersion: AGENT_VERSION });
  const res = await session.enrollWith({
    enrollmentToken: values.token,
    reportedDeviceId,
    ...(values.name ? { name: values.name } : {}),
    ...(values.label?.length ? { labels: labelsOf(values.label) } : {}),
    facts,
  }).catch((error: Error) => {
    if (error instanceof TpmError) throw new Error(`the TPM could not make or attest the device key: ${error.message}; nothing was enrolled or stored`);
    if (error instanceof TpmChallengeRefused) throw new Error(`${error.message}; nothing was enrolled or stored`);
    throw new Error(`the service at ${url.origin} cannot be reached (${error.message}); nothing was enrolled or stored`);
  });
  if (!succeeded(res)) {
    const message = (res.body as unknown as { message?: string })?.message ?? `HTTP ${res.status}`;
    console.error(`fleet-agent: enrollment refused (${res.status}): ${message}`);
    return res.status === 401 || res.status === 403 ? EXIT_CREDENTIALS_REFUSED : 1;
  }
  await storeCredentials(state, {
    serviceUrl: url.origin,
    deviceId: res.body.deviceId,
    reportedDeviceId,
    name: values.name ?? reportedDeviceId,
    certificateId: res.body.certificateId ?? null,
    certificateNotAfter: res.body.certificateNotAfter,
    heartbeatIntervalSeconds: res.body.heartbeatIntervalSeconds,
    enrolledAt: new Date().toISOString(),
  }, session.currentKey, res.body.certificate, res.body.caChain);
  for (const stale of ["deployments.json", "installed.json", "log-cursors.json", "outbox"]) if (values.force) state.remove(stale);
  if (res.body.attestation === "tpm") console.log("the device key is held by the TPM, attested by the service");
  console.log(`enrolled as device ${res.body.deviceId}; certificate valid until ${res.body.certificateNotAfter}; state in ${state.dir}`);
  console.log("next: fleet-agent run" + (values["state-dir"] ? ` --state-dir ${values["state-dir"]}` : "") + " (or systemctl enable --now fleet-agent)");
  return 0;
}

async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { "state-dir": { type: "string" }, engine: { type: "string" }, config: { type: "string" } } });
  if (values.engine && values.engine !== "podman" && values.engine !== "docker") throw new UsageError("--engine is podman or docker");
  const state = stateDirOf(values["state-dir"]);
  loadIdentity(state); // says "not enrolled" before anything else
  // a configuration that says something wrong stops the agent naming the setting, before it runs
  const remoteAccess = loadRemoteAccess(values.config ?? process.env.FLEET_AGENT_CONFIG);
  const engine = await detectEngine(values.engine as "podman" | "docker" | undefined);
  const agent = new FleetAgent({
    state, engine, remoteAccess,
    ...(process.env.FLEET_AGENT_TELEMETRY_SECONDS ? { telemetryIntervalMs: Number(process.env.FLEET_AGENT_TELEMETRY_SECONDS) * 1000 } : {}),
    ...(process.env.FLEET_AGENT_LOG_SECONDS ? { logIntervalMs: Number(process.env.FLEET_AGENT_LOG_SECONDS) * 1000 } : {}),
  });
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      agent.log("info", `${signal}: stopping; the workloads keep running`);
      void agent.stop(0);
    });
  }
  await agent.start();
  return agent.done;
}

function osUpdate(args: string[]): number {
  const { values } = parseArgs({ args, options: { url: { type: "string" }, sha256: { type: "string" }, version: { type: "string" }, "health-seconds": { type: "string" }, "state-dir": { type: "string" } } });
  const sha256 = values.sha256?.replace(/^sha256:/, "");
  const target: OsUpdateTarget = {
    url: values.url ?? "", sha256: sha256 ?? "",
    ...(values.version ? { version: values.version } : {}),
    ...(values["health-seconds"] !== undefined ? { healthSeconds: Number(values["health-seconds"]) } : {}),
  };
  const problem = targetProblem(target);
  if (problem) throw new UsageError(`os-update: ${problem.replace(/^(\w+)/, (name) => `--${name === "healthSeconds" ? "health-seconds" : name}`)}`);
  const state = stateDirOf(values["state-dir"]);
  loadIdentity(state);
  requestOsUpdate(state, target);
  console.log(`the OS update is handed to the agent (${state.path("os-update-request.json")}); fleet-agent status shows how it goes`);
  return 0;
}

/** The configuration revision in effect and the last outcome (agent/src/config/), without any content. */
function configurationStatus(state: StateDir) {
  const applied = state.readJson<{ revision: string; files: Array<{ path: string; layer?: string }> }>("config/applied.json");
  const outcome = state.readJson<{ revision: string; state: string; message?: string; drift: unknown[] }>("config/status.json");
  if (!applied && !outcome) return null;
  return {
    appliedRevision: applied?.revision ?? null, files: applied?.files.map((f) => f.path) ?? [],
    last: outcome ? { revision: outcome.revision, state: outcome.state, ...(outcome.message ? { message: outcome.message } : {}), drift: outcome.drift } : null,
  };
}

function status(args: string[]): number {
  const { values } = parseArgs({ args, options: { "state-dir": { type: "string" } } });
  const state = stateDirOf(values["state-dir"]);
  const identity = loadIdentity(state);
  const deployments = state.readJson<Array<{ deploymentId: string; applicationId: string; version: string; state: string; message?: string }>>("deployments.json") ?? [];
  const waiting = (name: string) => (state.readJson<unknown[]>(`outbox/${name}.json`) ?? []).length;
  console.log(JSON.stringify({
    service: identity.serviceUrl, deviceId: identity.deviceId, name: identity.name, certificateNotAfter: identity.certificateNotAfter,
    key: identity.keyKind === "tpm" ? "held by the TPM (fleet-agent enroll --tpm)" : "file in the state directory",
    heartbeatIntervalSeconds: identity.heartbeatIntervalSeconds,
    deployments: deployments.map((d) => ({ deploymentId: d.deploymentId, application: d.applicationId, version: d.version, state: d.state, ...(d.message ? { message: d.message } : {}) })),
    waiting: { telemetrySnapshots: waiting("telemetry"), logLines: waiting("logs") },
    osUpdate: state.readJson<OsUpdateState>("os-update.json"),
    configuration: configurationStatus(state),
  }, null, 2));
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === "--help" || command === "-h" || command === "help") {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (command === "--version") {
    console.log(AGENT_VERSION);
    return 0;
  }
  try {
    if (command === "enroll") return await enroll(rest);
    if (command === "run") return await run(rest);
    if (command === "status") return status(rest);
    if (command === "os-update") return osUpdate(rest);
    throw new UsageError(`unknown command ${command}`);
  } catch (error) {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    console.error(`fleet-agent: ${(error as Error).message}${usage ? "\n\n" + USAGE : ""}`);
    return usage ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
