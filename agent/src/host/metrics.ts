// The real machine's figures for a telemetry snapshot (docs/devices.md, "The agent protocol"):
// CPU from /proc/stat, memory from /proc/meminfo, disk from statfs, uptime from /proc/uptime.
// The parsers are pure (they take the files' text) so the unit tests feed them fixture text;
// `HostMetrics` reads the files, under a /proc root the tests can point at a fixture tree.
import { promises as fs } from "node:fs";
import path from "node:path";

import type { HostMetricsSample } from "../core/reports.js";

export type { HostMetricsSample };

/** The aggregate "cpu" line of /proc/stat, in clock ticks since boot. */
export interface CpuTimes {
  /** every tick the CPUs spent, busy or not */
  total: number;
  /** ticks spent idle or waiting for I/O (neither is work) */
  idle: number;
}

export interface MemoryFigures {
  usedBytes: number;
  totalBytes: number;
}

export interface DiskFigures {
  usedBytes: number;
  totalBytes: number;
}

/**
 * The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal guest
 * guest_nice. guest and guest_nice are already counted in user and nice (proc(5)), so they are
 * left out of the total; steal (time a hypervisor gave to someone else) counts as busy, as top
 * counts it.
 */
export function parseProcStat(text: string): CpuTimes {
  const line = text.split("\n").find((l) => /^cpu\s/.test(l));
  if (!line) throw new Error("/proc/stat has no aggregate cpu line");
  const [user, nice, system, idle, iowait = 0, irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  const fields = [user, nice, system, idle, iowait, irq, softirq, steal];
  if (fields.some((n) => !Number.isFinite(n))) throw new Error(`/proc/stat: unreadable cpu line '${line}'`);
  return { total: fields.reduce((a, b) => a + b, 0), idle: idle + iowait };
}

/** Share of the CPU time between two reads that was work, in percent (one decimal); null when no tick passed. */
export function cpuUsageBetween(before: CpuTimes, after: CpuTimes): number | null {
  const total = after.total - before.total;
  if (total <= 0) return null;
  const busy = total - (after.idle - before.idle);
  return Math.round(Math.min(100, Math.max(0, (busy / total) * 100)) * 10) / 10;
}

/**
 * Used and total memory from /proc/meminfo, as `free` counts "used" against "available":
 * MemTotal - MemAvailable (page cache the kernel can drop is not used). Kernels before 3.14
 * have no MemAvailable: MemFree + Buffers + Cached stands in for it.
 */
export function parseMeminfo(text: string): MemoryFigures {
  const kib = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?\s*$/.exec(line);
    if (match) kib.set(match[1], Number(match[2]));
  }
  const total = kib.get("MemTotal");
  if (total === undefined) throw new Error("/proc/meminfo has no MemTotal");
  const available = kib.get("MemAvailable") ?? (kib.get("MemFree") ?? 0) + (kib.get("Buffers") ?? 0) + (kib.get("Cached") ?? 0);
  return { usedBytes: Math.max(0, total - available) * 1024, totalBytes: total * 1024 };
}

/** Seconds since boot: the first figure of /proc/uptime, whole seconds. */
export function parseUptime(text: string): number {
  const first = text.trim().split(/\s+/)[0];
  if (!/^\d+(\.\d+)?$/.test(first)) throw new Error(`/proc/uptime: unreadable '${text.trim()}'`);
  return Math.floor(Number(first));
}

/** Disk figures of a statfs result, as `df` counts them: used = (blocks - bfree) * bsize, total = blocks * bsize. */
export function diskFigures(stats: { bsize: number; blocks: number; bfree: number }): DiskFigures {
  return { usedBytes: (stats.blocks - stats.bfree) * stats.bsize, totalBytes: stats.blocks * stats.bsize };
}

export interface HostMetricsOptions {
  /** where proc is mounted; default "/proc" (the unit tests point it at a fixture tree) */
  procRoot?: string;
  /** the file system whose usage is reported; default "/" */
  diskPath?: string;
}

/**
 * Reads the machine's figures. CPU usage is a rate, so it needs two reads of /proc/stat: each
 * call of `cpuUsagePercent()` (and of `sample()`) measures since the call before. The first
 * call primes the measurement and, having no earlier read, answers the average since boot
 * (the counters against zero), a true figure though a smoothed one: the agent's first
 * snapshot, taken at start, holds it; every later one covers the interval before it.
 */
export class HostMetrics {
  private readonly procRoot: string;
  private readonly diskPath: string;
  private previousCpu: CpuTimes = { total: 0, idle: 0 };
  private lastCpuUsage = 0;

  constructor(options: HostMetricsOptions = {}) {
    this.procRoot = options.procRoot ?? "/proc";
    this.diskPath = options.diskPath ?? "/";
  }

  private read(file: string): Promise<string> {
    return fs.readFile(path.join(this.procRoot, file), "utf8");
  }

  /** Busy share of all CPUs since the previous call (the first call: since boot). */
  async cpuUsagePercent(): Promise<number> {
    const now = parseProcStat(await this.read("stat"));
    // Two reads within one clock tick (10 ms) see no time pass: keep the last figure.
    const usage = cpuUsageBetween(this.previousCpu, now);
    this.previousCpu = now;
    if (usage !== null) this.lastCpuUsage = usage;
    return this.lastCpuUsage;
  }

  async memory(): Promise<MemoryFigures> {
    return parseMeminfo(await this.read("meminfo"));
  }

  async disk(): Promise<DiskFigures> {
    return diskFigures(await fs.statfs(this.diskPath));
  }

  async uptimeSeconds(): Promise<number> {
    return parseUptime(await this.read("uptime"));
  }

  /** Everything at once, for one telemetry snapshot. */
  async sample(): Promise<HostMetricsSample> {
    const [cpuUsagePercent, memory, disk, uptimeSeconds] = await Promise.all([this.cpuUsagePercent(), this.memory(), this.disk(), this.uptimeSeconds()]);
    return {
      cpuUsagePercent,
      memoryUsedBytes: memory.usedBytes,
      memoryTotalBytes: memory.totalBytes,
      diskUsedBytes: disk.usedBytes,
      diskTotalBytes: disk.totalBytes,
      uptimeSeconds,
    };
  }
}
