// fleet deploy, fleet rollout watch|status|promote|approve|pause|resume|abort|retry-failed:
// the deployment workflow of docs/deployments.md from the terminal. `deploy` creates the
// deployment (POST /deployments) and starts it; with --wait it follows the rollout and exits 0
// only when it completed, 8 when it paused (failure threshold), failed (timeout) or was aborted.
import type { Command } from "commander";
import type { ApiClient } from "../client.js";
import { CliError, EXIT } from "../errors.js";
import { table } from "../output.js";
import { watchLoop } from "../realtime.js";
import { connect, durationMs, formatOf, idByName, isUuid, pairs, print, type Globals } from "../runtime.js";
import type { Io } from "../main.js";

type RolloutState = "draft" | "initialized" | "canary" | "awaiting_approval" | "in_progress" | "paused" | "completed" | "aborted" | "failed";

interface Deployment {
  id: string;
  name: string;
  applicationName: string;
  version: string;
  status: string;
  rolloutState: RolloutState;
  rolloutReason: string | null;
  strategy: { type: "all-at-once" | "staged" };
  progress: Record<string, number>;
}

interface Batch {
  index: number;
  kind: string;
  size: number;
  state: string;
  successTarget: number;
  counts: Record<string, number>;
  outcome: { summary: string } | null;
  deadlineAt: string | null;
}

interface Rollout {
  state: RolloutState;
  currentBatch: number | null;
  batches: Batch[];
  successThreshold: number;
  failureThreshold: number;
  autoAdvance: boolean;
  reason: string | null;
}

const FINAL: RolloutState[] = ["completed", "aborted", "failed"];
const STOPPED: RolloutState[] = ["paused", "aborted", "failed"];

/** A batch size: "5%" is a percent, "5" a count. */
function sizeOf(text: string, flag: string): { count: number } | { percent: number } {
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(text.trim());
  if (!m) throw new CliError(EXIT.usage, `${flag} takes a count or a percent (5 or 5%), not "${text}"`);
  return m[2] ? { percent: Number(m[1]) } : { count: Number(m[1]) };
}

/** --set values: true/false and numbers as such, everything else a string (the manifest's declarations check them). */
function parameterValue(text: string): string | number | boolean {
  if (text === "true" || text === "false") return text === "true";
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  return text;
}

interface Application {
  id: string;
  key: string;
  name: string;
}

async function findApplication(client: ApiClient, wanted: string): Promise<Application> {
  if (isUuid(wanted)) return client.request<Application>("GET", `/applications/${wanted}`);
  const { items } = await client.all<Application>("/applications", { q: wanted });
  const app = items.find((a) => a.key === wanted) ?? items.find((a) => a.name === wanted);
  if (!app) throw new CliError(EXIT.notFound, `no application "${wanted}" in the catalog (fleet applications list)`);
  return app;
}

export async function deploy(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number> {
  const opts = cmd.opts<{
    selector?: string[]; device?: string[]; profile?: string; set?: string[]; name?: string; canary?: string; batches?: string;
    successThreshold?: string; failureThreshold?: string; autoAdvance?: boolean; wait?: boolean; timeout: string;
  }>();
  const [appText, versionText] = String(args[0]).split("@");
  const selector = pairs(opts.selector, "--selector");
  if (!Object.keys(selector).length && !opts.device?.length) throw new CliError(EXIT.usage, "deploy needs a target: --selector key=value or --device ID");
  const timeoutMs = durationMs(opts.timeout, "--timeout");
  const { client } = await connect(globals, io);
  const app = await findApplication(client, appText);
  const { items: versions } = await client.all<{ version: string; profiles: Array<{ id: string }> }>(`/applications/${app.id}/versions`);
  const version = versionText ? versions.find((v) => v.version === versionText) : versions[0];
  if (!version) throw new CliError(EXIT.notFound, versionText ? `${app.key} has no version ${versionText} (${versions.map((v) => v.version).join(", ")})` : `${app.key} has no version`);
  const profileId = opts.profile ?? version.profiles[0]?.id;
  if (!profileId) throw new CliError(EXIT.usage, `${app.key} ${version.version} has no deployment profile`);
  const staged = Boolean(opts.canary || opts.batches || opts.successThreshold || opts.failureThreshold || opts.autoAdvance);
  const strategy = staged
    ? {
        type: "staged",
        canary: sizeOf(opts.canary ?? "1", "--canary"),
        ...(opts.batches ? { batches: opts.batches.split(",").map((b) => sizeOf(b, "--batches")) } : {}),
        ...(opts.successThreshold ? { successThreshold: Number(opts.successThreshold) } : {}),
        ...(opts.failureThreshold ? { failureThreshold: Number(opts.failureThreshold) } : {}),
        ...(opts.autoAdvance ? { autoAdvance: true } : {}),
      }
    : { type: "all-at-once" };
  const stamp = new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14);
  const parameters = Object.fromEntries(Object.entries(pairs(opts.set, "--set")).map(([k, v]) => [k, parameterValue(v)]));
  const created = await client.request<Deployment>("POST", "/deployments", {
    body: {
      name: opts.name ?? `${app.key}-${version.version}-${stamp}`,
      applicationId: app.id,
      version: version.version,
      profileId,
      parameters,
      target: opts.device?.length ? { deviceIds: opts.device } : { labelSelector: selector },
      strategy,
    },
  });
  const started = await client.request<Deployment>("POST", `/deployments/${created.id}/start`);
  io.stderr.write(`Deployment ${started.name} (${started.id}): ${app.key} ${version.version} (${profileId}), ${strategy.type}, started\n`);
  if (!opts.wait) {
    if (formatOf(globals, io) !== "table") print(io, globals, started);
    else io.stdout.write(`${started.id}\n`);
    return EXIT.ok;
  }
  return follow(client, started.id, timeoutMs, globals, io);
}

/** Follows a deployment until its rollout ends: 0 when it completed, 8 when it stopped short. */
async function follow(client: ApiClient, id: string, timeoutMs: number, globals: Globals, io: Io): Promise<number> {
  const signal = AbortSignal.timeout(timeoutMs);
  let last = "";
  let final: Deployment | null = null;
  let rollout: Rollout | null = null;
  await watchLoop(client, "deployments", (e) => e.data.deploymentId === id || e.data.id === id, async () => {
    const deployment = await client.request<Deployment>("GET", `/deployments/${id}`);
    rollout = deployment.strategy.type === "staged" ? await client.request<Rollout>("GET", `/deployments/${id}/rollout`) : null;
    const p = deployment.progress;
    const line = `${deployment.rolloutState}${rollout?.currentBatch != null ? ` (batch ${rollout.currentBatch} of ${rollout.batches.length})` : ""}: ${p.running ?? 0} running, ${p.failed ?? 0} failed, ${(p.pending ?? 0) + (p.downloading ?? 0) + (p.installing ?? 0)} in flight${deployment.rolloutReason ? ` - ${deployment.rolloutReason}` : ""}`;
    if (line !== last) {
      io.stderr.write(`${line}\n`);
      if (deployment.rolloutState === "awaiting_approval") io.stderr.write(`  waiting for approval: fleet rollout approve ${id} (or promote)\n`);
    }
    last = line;
    if (FINAL.includes(deployment.rolloutState) || STOPPED.includes(deployment.rolloutState)) {
      final = deployment;
      return true;
    }
    return false;
  }, 5_000, signal);
  const end = final as Deployment | null;
  if (formatOf(globals, io) !== "table") print(io, globals, rollout ? { deployment: end, rollout } : { deployment: end });
  if (!end) {
    io.stderr.write(`error: the rollout did not end within the --timeout (${last})\n`);
    return EXIT.rolloutFailed;
  }
  if (end.rolloutState === "completed" && !(end.strategy.type === "all-at-once" && (end.progress.failed ?? 0) > 0)) return EXIT.ok;
  io.stderr.write(`error: the rollout ${end.rolloutState === "completed" ? "completed with failed devices" : `is ${end.rolloutState}`}${end.rolloutReason ? `: ${end.rolloutReason}` : ""}\n`);
  return EXIT.rolloutFailed;
}

const deploymentId = (client: ApiClient, wanted: string) => idByName(client, "/deployments", wanted, "deployment");

export async function status(args: unknown[], globals: Globals, io: Io): Promise<void> {
  const { client } = await connect(globals, io);
  const id = await deploymentId(client, String(args[0]));
  const [deployment, rollout] = await Promise.all([client.request<Deployment>("GET", `/deployments/${id}`), client.request<Rollout>("GET", `/deployments/${id}/rollout`)]);
  if (formatOf(globals, io) === "table") io.stdout.write(rolloutView(deployment, rollout));
  else print(io, globals, rollout);
}

export function move(name: "promote" | "approve" | "pause" | "resume" | "abort" | "retry-failed") {
  return async (args: unknown[], globals: Globals, io: Io): Promise<void> => {
    const { client } = await connect(globals, io);
    const id = await deploymentId(client, String(args[0]));
    const rollout = await client.request<Rollout>("POST", `/deployments/${id}/rollout/${name}`, { body: {} });
    if (formatOf(globals, io) === "table") io.stdout.write(`${name}: the rollout is ${rollout.state}${rollout.reason ? ` (${rollout.reason})` : ""}\n`);
    else print(io, globals, rollout);
  };
}

const COUNTS = ["pending", "downloading", "installing", "running", "failed", "skipped"] as const;

/** The rollout as the console's rollout page shows it: state, thresholds, one row per batch. */
export function rolloutView(deployment: Deployment, rollout: Rollout): string {
  const head = [
    `Deployment ${deployment.name}  ${deployment.applicationName} ${deployment.version}  (${deployment.id})`,
    `State: ${rollout.state}${rollout.currentBatch != null ? `   batch ${rollout.currentBatch} of ${rollout.batches.length - 1} in flight` : ""}   success threshold ${rollout.successThreshold}%   failure threshold ${rollout.failureThreshold}%   ${rollout.autoAdvance ? "auto-advance" : "approval between batches"}`,
    ...(rollout.reason ? [`Reason: ${rollout.reason}`] : []),
    "",
  ];
  const rows = [["BATCH", "KIND", "STATE", "SIZE", "TARGET", ...COUNTS.map((c) => c.toUpperCase())]];
  for (const b of rollout.batches) rows.push([String(b.index), b.kind, b.state, String(b.size), String(b.successTarget), ...COUNTS.map((c) => String(b.counts[c] ?? 0))]);
  const outcomes = rollout.batches.filter((b) => b.outcome).map((b) => `  batch ${b.index}: ${b.outcome!.summary}`);
  return `${head.join("\n")}\n${table(rows)}${outcomes.length ? `\nOutcomes:\n${outcomes.join("\n")}\n` : ""}`;
}

export async function watch(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number> {
  const { client } = await connect(globals, io);
  const id = await deploymentId(client, String(args[0]));
  const pollMs = durationMs(cmd.opts().interval, "--interval");
  const tty = Boolean(io.stdout.isTTY);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGINT", onSignal);
  let last = "";
  let state = "draft" as RolloutState;
  try {
    await watchLoop(client, "deployments", (e) => e.data.deploymentId === id || e.data.id === id, async () => {
      const [deployment, rollout] = await Promise.all([client.request<Deployment>("GET", `/deployments/${id}`), client.request<Rollout>("GET", `/deployments/${id}/rollout`)]);
      state = rollout.state;
      const view = rolloutView(deployment, rollout);
      if (view !== last) {
        // on a terminal the view is redrawn in place; in a pipe each change is printed once
        io.stdout.write(tty ? `\x1b[H\x1b[2J${view}\nWatching (realtime events and a ${pollMs / 1000} s poll); Ctrl-C to stop. ${new Date().toLocaleTimeString()}\n` : `${view}\n`);
        last = view;
      }
      return FINAL.includes(rollout.state);
    }, pollMs, stop.signal);
  } finally {
    process.off("SIGINT", onSignal);
  }
  if (stop.signal.aborted) return EXIT.ok;
  return state === "completed" ? EXIT.ok : EXIT.rolloutFailed;
}
