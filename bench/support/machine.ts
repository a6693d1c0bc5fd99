// What the figures were measured on: printed by every benchmark.
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
