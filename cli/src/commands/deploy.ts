// fleet deploy, fleet rollout watch|status|promote|approve|pause|resume|abort|retry-failed:
// the deployment workflow of docs/deployments.md from the terminal. `deploy` creates the
// deployment (POST /deployments) and starts it; with --wait it follows the rollout and exits 0
// only when it completed, 8 when it paused (failure threshold), failed (timeout) or was aborted.
// deploy --wait and rollout watch say where the deployment is by one line (stateLine): the
// deployment's one state as the API computes it (docs/deployments.md, "One state") and its
// rollout's position, batches numbered as the console numbers them (the canary, then batch 1
// of N); "in flight" only for devices working on an install they were told to do.
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
  /** the one state (draft, scheduled, rolling_out, awaiting_approval, paused, completed, aborted, failed, stopping, stopped, deleting) */
  state: string;
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

/** States in which a rollout has ended (the deployment's one state): watch stops there; deploy --wait also at a pause. */
const ENDED = ["completed", "aborted", "failed", "stopping", "stopped", "deleting"];

/** A batch as the console names it: "canary", "batch 1 of 2" (N: the batches after the canary). */
export function batchName(rollout: Pick<Rollout, "batches">, index: number): string {
  return index === 0 ? "canary" : `batch ${index} of ${rollout.batches.length - 1}`;
}

/** Where the rollout is, in the words of the deployment's state (with its separator); "" when there is nothing to add. */
function position(state: string, rollout: Pick<Rollout, "currentBatch" | "batches">): string {
  const index = rollout.currentBatch;
  if (state === "completed") {
    const after = rollout.batches.length - 1;
    return after > 0 ? `, canary and ${after} batch${after === 1 ? "" : "es"} done` : rollout.batches.length ? ", canary done" : "";
  }
  if (index === null) return "";
  const name = batchName(rollout, index);
  const inFlight = rollout.batches.find((b) => b.index === index)?.state === "in_progress";
  switch (state) {
    case "rolling_out": return inFlight ? `, ${name} in flight` : "";
    case "paused": return inFlight ? `, ${name} on hold` : `, after the ${name}`;
    case "awaiting_approval": return `, ${name} done, the next batch waits for approval`;
    case "aborted": return ` at ${index === 0 ? "the canary" : name}`;
    case "failed": return `: ${index === 0 ? "the canary" : name} timed out`;
    default: return "";
  }
}

/** The deployment's state and its rollout's position: "rolling out, batch 1 of 2 in flight". */
export function stateLine(deployment: Pick<Deployment, "state">, rollout: Pick<Rollout, "currentBatch" | "batches"> | null): string {
  return `${deployment.state.replace(/_/g, " ")}${rollout ? position(deployment.state, rollout) : ""}`;
}

/**
 * Devices by what they do: in flight are those told to install and not done (pending,
 * downloading, installing; in a staged rollout only in batches that were dispatched), waiting
 * those not told yet (a planned batch) or waiting for a retry, their window or the budget.
 */
export function deviceCounts(deployment: Pick<Deployment, "progress">, rollout: Pick<Rollout, "batches"> | null): { running: number; failed: number; inFlight: number; waiting: number } {
  const p = (key: string) => deployment.progress[key] ?? 0;
  const busy = (c: Record<string, number>) => (c.pending ?? 0) + (c.downloading ?? 0) + (c.installing ?? 0);
  const dispatched = rollout ? rollout.batches.filter((b) => b.state !== "planned") : null;
  const inFlight = dispatched ? dispatched.reduce((n, b) => n + busy(b.counts), 0) : busy(deployment.progress);
  const planned = rollout ? rollout.batches.filter((b) => b.state === "planned").reduce((n, b) => n + busy(b.counts), 0) : 0;
  return { running: p("running"), failed: p("failed"), inFlight, waiting: planned + p("waiting_to_retry") + p("waiting_for_window") + p("waiting_for_budget") };
}

/** deploy --wait's progress line: the state line, then the devices. */
export function progressLine(deployment: Deployment, rollout: Rollout | null): string {
  const c = deviceCounts(deployment, rollout);
  return `${stateLine(deployment, rollout)} - ${c.running} running, ${c.failed} failed, ${c.inFlight} in flight, ${c.waiting} waiting${deployment.rolloutReason ? ` - ${deployment.rolloutReason}` : ""}`;
}

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
    const line = progressLine(deployment, rollout);
    if (line !== last) {
      io.stderr.write(`${line}\n`);
      if (deployment.state === "awaiting_approval") io.stderr.write(`  waiting for approval: fleet rollout approve ${id} (or promote)\n`);
    }
    last = line;
    if (ENDED.includes(deployment.state) || deployment.state === "paused") {
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
  if (end.state === "completed" && !(end.strategy.type === "all-at-once" && (end.progress.failed ?? 0) > 0)) return EXIT.ok;
  io.stderr.write(`error: the rollout ${end.state === "completed" ? "completed with failed devices" : `is ${end.state.replace(/_/g, " ")}`}${end.rolloutReason ? `: ${end.rolloutReason}` : ""}\n`);
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
    `State: ${stateLine(deployment, rollout)}   success threshold ${rollout.successThreshold}%   failure threshold ${rollout.failureThreshold}%   ${rollout.autoAdvance ? "auto-advance" : "approval between batches"}`,
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
  let state = "draft";
  try {
    await watchLoop(client, "deployments", (e) => e.data.deploymentId === id || e.data.id === id, async () => {
      const [deployment, rollout] = await Promise.all([client.request<Deployment>("GET", `/deployments/${id}`), client.request<Rollout>("GET", `/deployments/${id}/rollout`)]);
      state = deployment.state;
      const view = rolloutView(deployment, rollout);
      if (view !== last) {
        // on a terminal the view is redrawn in place; in a pipe each change is printed once
        io.stdout.write(tty ? `\x1b[H\x1b[2J${view}\nWatching (realtime events and a ${pollMs / 1000} s poll); Ctrl-C to stop. ${new Date().toLocaleTimeString()}\n` : `${view}\n`);
        last = view;
      }
      return ENDED.includes(deployment.state);
    }, pollMs, stop.signal);
  } finally {
    process.off("SIGINT", onSignal);
  }
  if (stop.signal.aborted) return EXIT.ok;
  return state === "completed" ? EXIT.ok : EXIT.rolloutFailed;
}
