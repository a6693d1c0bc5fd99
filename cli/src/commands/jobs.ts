// fleet jobs create KIND --selector k=v [--canary N] [--batches 25%,100%] [--wait]: one device
// action over the devices of a label selector, as a job (POST /jobs, docs/actions.md). The
// kinds that change what runs ask on a terminal and need --yes off one, as fleet reboot does.
// With --wait it follows the job and exits 0 once it completed, 8 when it paused (failure
// threshold), expired or was cancelled. The other operations are the generated `fleet jobs ...`.
import type { Command } from "commander";
import { CliError, EXIT } from "../errors.js";
import { connect, consent, durationMs, idByName, pairs, pause, print, type Globals } from "../runtime.js";
import type { Io } from "../main.js";

interface Job { id: string; kind: string; state: string; stateReason: string | null; eligible: number; skipped: number; currentBatch: number | null; batches: unknown[]; counts: Record<string, number> }

const DISRUPTIVE = new Set(["reboot", "restart-app", "stop-app", "start-app", "restart-agent"]);
const ENDED_BADLY = new Set(["paused", "expired", "cancelled"]);

/** "5" devices, or "25%" of them: the API's { count } or { percent }. */
function share(text: string, flag: string): { count: number } | { percent: number } {
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(text.trim());
  if (!m) throw new CliError(EXIT.usage, `${flag} takes a count or a percent (5 or 25%), not "${text}"`);
  return m[2] ? { percent: Number(m[1]) } : { count: Number(m[1]) };
}

type Opts = { selector: string[]; app?: string; canary?: string; batches?: string[]; failureThreshold?: string; successThreshold?: string; reason?: string; expires?: string; yes?: boolean; wait?: boolean; timeout: string };

function line(job: Job): string {
  const c = job.counts;
  const batch = job.currentBatch === null ? "" : job.currentBatch === 0 ? " · canary" : ` · batch ${job.currentBatch} of ${job.batches.length - 1}`;
  return `${job.state}${batch}: ${c.succeeded} succeeded, ${c.failed + c.expired} failed or expired, ${c.pending + c.delivered + c.running + c.deferred} in flight, ${c.queued} queued${job.stateReason ? ` (${job.stateReason})` : ""}`;
}

export async function create(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number | void> {
  const opts = cmd.opts<Opts>();
  const kind = String(args[0]);
  const { client } = await connect(globals, io);
  const labelSelector = pairs(opts.selector, "--selector");
  const body = {
    kind,
    target: { labelSelector },
    ...(opts.app ? { deploymentId: await idByName(client, "/deployments", opts.app, "deployment") } : {}),
    ...(opts.reason ? { reason: opts.reason } : {}),
    ...(opts.expires ? { expiresInSeconds: Math.round(durationMs(opts.expires, "--expires") / 1000) } : {}),
    strategy: {
      ...(opts.canary ? { canary: share(opts.canary, "--canary") } : {}),
      ...(opts.batches ? { batches: opts.batches.map((b) => share(b, "--batches")) } : {}),
      ...(opts.failureThreshold ? { failureThreshold: Number(opts.failureThreshold) } : {}),
      ...(opts.successThreshold ? { successThreshold: Number(opts.successThreshold) } : {}),
    },
  };
  if (DISRUPTIVE.has(kind)) {
    const preview = await client.request<{ eligible: number }>("POST", "/jobs/preview", { body: { kind: body.kind, target: body.target, deploymentId: body.deploymentId, strategy: body.strategy } });
    if (!(await consent(io, opts.yes, `${kind} on ${preview.eligible} devices? [y/N] `, `a ${kind} job`))) {
      io.stderr.write("nothing done\n");
      return EXIT.error;
    }
  }
  let job = await client.request<Job>("POST", "/jobs", { body });
  io.stderr.write(`job ${job.id}: ${kind} over ${job.eligible} devices (${job.skipped} skipped)\n`);
  if (!opts.wait) return print(io, globals, job);
  const deadline = Date.now() + durationMs(opts.timeout, "--timeout");
  let said = "";
  for (;;) {
    const now = line(job);
    if (now !== said) io.stderr.write(`${now}\n`);
    said = now;
    if (job.state === "completed") return print(io, globals, job);
    if (ENDED_BADLY.has(job.state)) {
      print(io, globals, job);
      return EXIT.rolloutFailed;
    }
    if (Date.now() > deadline) throw new CliError(EXIT.error, `gave up after ${opts.timeout}: the job is ${job.state}`);
    await pause(2000);
    job = await client.request<Job>("GET", `/jobs/${job.id}`);
  }
}
