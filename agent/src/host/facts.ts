// The facts a real machine reports in its heartbeat (docs/devices.md, "The agent protocol"):
// the named ones the service keeps as device columns (os, arch, agentVersion, hardwareModel,
// ipAddress) and free-form flat ones (kernel, hostname, addresses, cpuCores, memoryTotalBytes).
// Every value fits the service's fact schema: a string of at most 1000 characters, a number, a
// boolean or null, under a key matching FACT_KEY.
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseMeminfo } from "./metrics.js";

export type FactValue = string | number | boolean | null;
export type Facts = Record<string, FactValue>;

/** The service's limits on one fact (src/modules/agent/schemas.ts). */
export const FACT_KEY = /^[A-Za-z][A-Za-z0-9_.-]{0,99}$/;
export const FACT_STRING_MAX = 1000;

/** What the facts take from the running system rather than from files (the tests give their own). */
export interface SystemInfo {
  arch(): string;
  release(): string;
  hostname(): string;
  availableParallelism(): number;
  totalmem(): number;
  networkInterfaces(): NodeJS.Dict<os.NetworkInterfaceInfo[]>;
}

export interface ReadFactsOptions {
  /** the file system root the files are read under; default "/" (the tests point it at a fixture tree) */
  root?: string;
  /** the agent's own version, reported as agentVersion */
  agentVersion: string;
  /** default: node:os */
  system?: SystemInfo;
}

/** Node's names for CPU architectures, as the service's manifests name them (src/modules/groups/architectures.ts). */
const SERVICE_ARCH: Record<string, string> = { x64: "amd64", arm64: "arm64", arm: "arm", riscv64: "riscv64" };

/** The architecture in the service's vocabulary (amd64, arm64, arm, riscv64); any other as Node names it. */
export function serviceArch(nodeArch: string): string {
  return SERVICE_ARCH[nodeArch] ?? nodeArch;
}

/** The KEY=value pairs of an os-release file (os-release(5): shell-style quoting, # comments). */
export function parseOsRelease(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const match = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line);
    if (!match) continue;
    let value = match[2].trim();
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\([\\$"`])/g, "$1");
    }
    fields[match[1]] = value;
  }
  return fields;
}

/**
 * The hardware model: the device tree's `model` (ARM boards: "Raspberry Pi 4 Model B Rev 1.4",
 * stored NUL-terminated), else DMI's vendor and product (PCs and servers), else null.
 */
export function hardwareModelFrom(sources: { deviceTreeModel?: string | null; dmiVendor?: string | null; dmiProduct?: string | null }): string | null {
  const model = sources.deviceTreeModel?.replace(/\0+$/, "").trim();
  if (model) return model;
  const vendor = sources.dmiVendor?.trim() ?? "";
  const product = sources.dmiProduct?.trim() ?? "";
  // Some firmware repeats the vendor in the product name ("LENOVO" / "LENOVO ThinkCentre").
  const joined = product.toLowerCase().startsWith(vendor.toLowerCase()) ? product : `${vendor} ${product}`.trim();
  return joined || null;
}

// Bridges and virtual links container engines and hypervisors create: their addresses are not
// where the machine is reached from, so they come after the machine's own interfaces.
const VIRTUAL_INTERFACE = /^(docker\d*|podman\d*|cni|veth|br-|virbr|vnet|flannel|cali|cilium|kube-|lxcbr|lxdbr)/;

/**
 * The machine's addresses, loopback left out, its own interfaces before container bridges and
 * IPv4 before IPv6 (link-local IPv6 last): `ipAddress` is the first (null without any),
 * `addresses` all of them, comma-separated, as many whole ones as fit in a fact.
 */
export function addressFacts(interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]>): { ipAddress: string | null; addresses: string } {
  const rank = (name: string, info: os.NetworkInterfaceInfo) =>
    (VIRTUAL_INTERFACE.test(name) ? 4 : 0) + (info.family === "IPv4" ? 0 : info.address.toLowerCase().startsWith("fe80:") ? 2 : 1);
  const found: { address: string; rank: number; order: number }[] = [];
  for (const [name, infos] of Object.entries(interfaces)) {
    for (const info of infos ?? []) {
      if (!info.internal) found.push({ address: info.address, rank: rank(name, info), order: found.length });
    }
  }
  // A stable order: by rank, then as the system listed them.
  const addresses = [...new Set(found.sort((a, b) => a.rank - b.rank || a.order - b.order).map((f) => f.address))];
  return { ipAddress: addresses[0] ?? null, addresses: joinBounded(addresses, FACT_STRING_MAX) };
}

/** Items joined with commas, only whole items, at most `max` characters. */
export function joinBounded(items: string[], max: number): string {
  let joined = "";
  for (const item of items) {
    const next = joined ? `${joined},${item}` : item;
    if (next.length > max) break;
    joined = next;
  }
  return joined;
}

/** A file's text, or null when it is absent or unreadable (a fact the machine does not have). */
async function readOptional(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, "utf8");
  } catch {
    return null;
  }
}

/** The machine's facts for the heartbeat: see the top of this file. */
export async function readFacts(options: ReadFactsOptions): Promise<Facts> {
  const root = options.root ?? "/";
  const system = options.system ?? os;
  const at = (file: string) => path.join(root, file);
  const [osRelease, deviceTreeModel, dmiVendor, dmiProduct, meminfo] = await Promise.all([
    // os-release(5): /etc/os-release, else /usr/lib/os-release
    readOptional(at("etc/os-release")).then((text) => text ?? readOptional(at("usr/lib/os-release"))),
    readOptional(at("proc/device-tree/model")),
    readOptional(at("sys/class/dmi/id/sys_vendor")),
    readOptional(at("sys/class/dmi/id/product_name")),
    readOptional(at("proc/meminfo")),
  ]);
  const release = osRelease === null ? {} : parseOsRelease(osRelease);
  const facts: Facts = {
    os: release.PRETTY_NAME || [release.NAME, release.VERSION].filter(Boolean).join(" ") || "Linux",
    kernel: system.release(),
    arch: serviceArch(system.arch()),
    hardwareModel: hardwareModelFrom({ deviceTreeModel, dmiVendor, dmiProduct }),
    ...addressFacts(system.networkInterfaces()),
    hostname: system.hostname(),
    agentVersion: options.agentVersion,
    cpuCores: system.availableParallelism(),
    memoryTotalBytes: meminfo === null ? system.totalmem() : parseMeminfo(meminfo).totalBytes,
  };
  return fitFacts(facts);
}

/** Facts as the service's schema takes them: strings cut to FACT_STRING_MAX, keys checked. */
export function fitFacts(facts: Facts): Facts {
  const fitted: Facts = {};
  for (const [key, value] of Object.entries(facts)) {
    if (!FACT_KEY.test(key)) throw new Error(`fact name '${key}' does not fit the service's schema`);
    fitted[key] = typeof value === "string" ? value.slice(0, FACT_STRING_MAX) : value;
  }
  return fitted;
}
