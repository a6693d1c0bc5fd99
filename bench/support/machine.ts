// What the figures were measured on: printed by every benchmark.
import fs from "node:fs";
import os from "node:os";

export function machineLine(): string {
  const cpus = os.cpus();
  return `machine: ${cpus.length} cores (${cpus[0]?.model?.trim() ?? "unknown"}), ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, ` +
    `Node ${process.version}, ${os.platform()} ${os.release()}; load average at start ${os.loadavg().map((l) => l.toFixed(1)).join(" / ")} ` +
    `(other work on the machine skews every figure: compare figures of one run)`;
}

export function fmtMs(n: number): string {
  return Number.isFinite(n) ? `${n.toFixed(n < 10 ? 2 : 1)} ms` : "-";
}

/** Median and p99 of a list of milliseconds. */
export function percentiles(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
  return { p50: at(50), p90: at(90), p99: at(99), n: s.length };
}

/** pid, parent pid, CPU time (user + system, clock ticks) of every process and of its children that exited, from /proc */
function processTable(): { pid: number; ppid: number; ticks: number; childTicks: number; cmdline: string }[] {
  const table = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")"
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      table.push({ pid: Number(entry), ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), childTicks: Number(fields[13]) + Number(fields[14]), cmdline });
    } catch {
      // the process exited while we read
    }
  }
  return table;
}

/** The PostgreSQL server listening on `port` and its child processes, from /proc; null when not found. */
function postgresProcesses(port: number) {
  if (!fs.existsSync("/proc/self/stat")) return null;
  const table = processTable();
  const server = table.find((p) => / -p \d+/.test(p.cmdline) && p.cmdline.includes(` -p ${port} `) && /\/postgres /.test(p.cmdline));
  return server ? { server, children: table.filter((p) => p.ppid === server.pid) } : null;
}

/**
 * CPU time (user + system, µs) used so far by the PostgreSQL server listening on `port` and its
 * backends (the pool's connections included; those that exited are in the server's
 * children's time). Null when not found (not Linux, a server elsewhere).
 */
export function postgresCpuMicros(port: number): number | null {
  const found = postgresProcesses(port);
  if (!found) return null;
  const ticks = found.server.childTicks + found.server.ticks + found.children.reduce((sum, p) => sum + p.ticks, 0);
  return (ticks / CLOCK_TICKS_PER_SECOND) * 1e6;
}

/**
 * The same for one database of a server others use too (the dev server): that database's
 * backends ("postgres: user db host(port) state", autovacuum workers naming it) and the
 * server's own processes (checkpointer, WAL writer, ...), not the other databases' backends.
 * Cumulative over the calls: an exited process keeps what was last read of it (the time
 * between that read and its exit is lost, so call it every few seconds); null when not found.
 */
export function postgresCpuTracker(port: number, database: string): () => number | null {
  const backend = /^postgres: \S+ (\S+) (\[local\]|\S+\(\d+\))/;
  const ours = (cmdline: string) => {
    if (cmdline.startsWith("postgres: autovacuum worker")) return cmdline.includes(` ${database}`);
    const match = backend.exec(cmdline);
    return !match || match[1] === database;
  };
  const seen = new Map<number, number>();
  let ticks = 0;
  return () => {
    const found = postgresProcesses(port);
    if (!found) return null;
    for (const p of [found.server, ...found.children.filter((c) => ours(c.cmdline))]) {
      ticks += p.ticks - (seen.get(p.pid) ?? 0);
      seen.set(p.pid, p.ticks);
    }
    return (ticks / CLOCK_TICKS_PER_SECOND) * 1e6;
  };
}

/** USER_HZ, 100 on every Linux this runs on (sysconf(_SC_CLK_TCK) is not reachable from Node). */
const CLOCK_TICKS_PER_SECOND = 100;
