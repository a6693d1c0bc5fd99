// A diagnostics bundle: what an operator needs to see why a device misbehaves, as one tar.gz
// (nanotar), capped in size: the agent's status and recent lines, the engine's view of each
// project, the last lines of each container's log, the journal's tail (when journalctl is
// there), disk and memory. Never a secret of the agent: no key, no certificate, no pull grant,
// no rendered compose file (parameters may be secret).
import { execFile } from "node:child_process";
import fsp from "node:fs/promises";
import { promisify } from "node:util";
import { createTarGzip } from "nanotar";
import type { ComposeEngine } from "../runtime/engine.js";

const run = promisify(execFile);
/** each part keeps its last bytes; the parts together stay well below the service's 8 MiB after compression */
const PART_MAX_BYTES = 512 * 1024;
const TOTAL_MAX_BYTES = 6 * 1024 * 1024;
const LOG_TAIL_LINES = 500;

export interface DiagnosticsSources {
  engine: ComposeEngine;
  /** compose projects of ours, by application */
  projects: Array<{ applicationId: string; name: string }>;
  /** the agent's status (fleet-agent status) */
  status: unknown;
  /** the agent's recent lines, oldest first */
  recentLines: string[];
  diskPath?: string;
}

export interface Bundle {
  data: Uint8Array;
  parts: string[];
  truncated: string[];
}

async function optional(task: () => Promise<string>): Promise<string> {
  try {
    return await task();
  } catch (error) {
    return `(not available: ${(error as Error).message.split("\n")[0]})\n`;
  }
}

export async function collectDiagnostics(sources: DiagnosticsSources): Promise<Bundle> {
  const parts: Array<{ name: string; text: string }> = [
    { name: "agent/status.json", text: JSON.stringify(sources.status, null, 2) + "\n" },
    { name: "agent/recent-lines.txt", text: sources.recentLines.join("\n") + "\n" },
  ];
  for (const project of sources.projects) {
    const containers = await sources.engine.containers(project.name).catch(() => []);
    parts.push({ name: `engine/${project.name}.json`, text: JSON.stringify({ applicationId: project.applicationId, containers }, null, 2) + "\n" });
    for (const container of containers) {
      const text = await optional(async () => (await sources.engine.logs(container.name, new Date(0), { tail: LOG_TAIL_LINES }))
        .map((l) => `${l.timestamp} ${l.stream} ${l.message}`).join("\n") + "\n");
      parts.push({ name: `containers/${container.name}.log`, text });
    }
  }
  parts.push({ name: "host/journal.txt", text: await optional(async () => (await run("journalctl", ["-n", String(LOG_TAIL_LINES), "--no-pager", "-o", "short-iso"], { maxBuffer: 4 * PART_MAX_BYTES })).stdout) });
  parts.push({ name: "host/memory.txt", text: await optional(() => fsp.readFile("/proc/meminfo", "utf8")) });
  parts.push({
    name: "host/disk.json",
    text: await optional(async () => {
      const s = await fsp.statfs(sources.diskPath ?? "/");
      return JSON.stringify({ path: sources.diskPath ?? "/", totalBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize, usedBytes: (s.blocks - s.bfree) * s.bsize }) + "\n";
    }),
  });

  const truncated: string[] = [];
  let budget = TOTAL_MAX_BYTES;
  const files = parts.map(({ name, text }) => {
    let data = Buffer.from(text);
    const cap = Math.min(PART_MAX_BYTES, Math.max(0, budget));
    if (data.length > cap) {
      data = Buffer.concat([Buffer.from(`(cut to its last ${cap} bytes)\n`), data.subarray(data.length - cap)]);
      truncated.push(name);
    }
    budget -= data.length;
    return { name, data: new Uint8Array(data) };
  });
  files.push({ name: "manifest.json", data: new Uint8Array(Buffer.from(JSON.stringify({ createdAt: new Date().toISOString(), parts: parts.map((p) => p.name), truncated }, null, 2) + "\n")) });
  return { data: await createTarGzip(files), parts: files.map((f) => f.name), truncated };
}
