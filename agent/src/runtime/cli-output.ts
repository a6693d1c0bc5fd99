// Reading what the podman and docker command lines print: their log lines with timestamps and
// the health word in a container's status ("Up 5 seconds (healthy)").
import type { LogLine, ProjectContainer } from "./engine.js";
import type { RunResult } from "./exec.js";

/** The label compose programs (docker compose, podman-compose) put on what they create. */
export const PROJECT_LABEL = "com.docker.compose.project";
export const SERVICE_LABEL = "com.docker.compose.service";
/** the directory of the compose file a container was made from (both compose programs set it) */
export const WORKING_DIR_LABEL = "com.docker.compose.project.working_dir";

/**
 * An engine's RFC 3339 time as UTC with nine fraction digits, so that times compare as text.
 * Go drops trailing zeros of the fraction ("05.1Z" is "05.100000000Z") and may write a zone
 * offset; null when it is not such a time.
 */
export function normalizeTimestamp(text: string): string | null {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(text);
  if (!match) return null;
  const seconds = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(seconds)) return null;
  return `${new Date(seconds).toISOString().slice(0, 19)}.${(match[2] ?? "").padEnd(9, "0")}Z`;
}

/** `podman/docker logs --timestamps` lines: an RFC 3339 time, a space, the line. */
export function parseTimestampedLog(output: string, stream: LogLine["stream"]): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of output.split("\n")) {
    const match = /^(\S+) ?(.*)$/.exec(line);
    const timestamp = match && normalizeTimestamp(match[1]);
    if (timestamp) lines.push({ timestamp, stream, message: match[2] });
  }
  return lines;
}

/** Both streams of a container's log as one list, oldest first (each engine stamps every line). */
export function mergeLogStreams(stdout: string, stderr: string): LogLine[] {
  const lines = [...parseTimestampedLog(stdout, "stdout"), ...parseTimestampedLog(stderr, "stderr")];
  // A stable sort: lines of one stream with the same time keep their order.
  return lines.sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0));
}

/** The health in a status line: podman "(starting)", docker "(health: starting)". */
export function healthFromStatus(status: string): ProjectContainer["health"] {
  const match = /\((?:health: )?(healthy|unhealthy|starting)\)/.exec(status);
  return match ? (match[1] as ProjectContainer["health"]) : null;
}

/** The exit code in a status line such as "Exited (3) 2 seconds ago". */
export function exitCodeFromStatus(status: string): number | null {
  const match = /^Exited \((-?\d+)\)/.exec(status);
  return match ? Number(match[1]) : null;
}

/** `podman/docker logs --timestamps --since ...` of one container, both streams merged, the last `tail`. */
export async function containerLogs(run: (args: string[]) => Promise<RunResult>, containerName: string, since: Date, tail?: number): Promise<LogLine[]> {
  const { stdout, stderr } = await run(["logs", "--timestamps", "--since", since.toISOString(), ...(tail !== undefined ? ["--tail", String(tail)] : []), containerName]);
  const lines = mergeLogStreams(stdout, stderr);
  // --tail counts each stream's lines: keep the last of both together.
  return tail !== undefined ? lines.slice(-tail) : lines;
}
