// The agent's view of the real machine (agent/src/host): facts and telemetry figures parsed from
// fixture text and fixture trees as Linux writes them, then read on this machine and compared
// with what other tools (free, df, uname, hostname, the kernel's sysinfo) say at the same moment.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  addressFacts,
  FACT_KEY,
  fitFacts,
  hardwareModelFrom,
  joinBounded,
  parseOsRelease,
  readFacts,
  serviceArch,
  type SystemInfo,
} from "../../../agent/src/host/facts.js";
import { cpuUsageBetween, diskFigures, HostMetrics, parseMeminfo, parseProcStat, parseUptime } from "../../../agent/src/host/metrics.js";

const tempDirs: string[] = [];
afterAll(() => tempDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A directory tree holding `files` (relative path -> content). */
function fixtureTree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), "agent-host-"));
  tempDirs.push(root);
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content);
  }
  return root;
}

const MEMINFO = `MemTotal:        3884328 kB
MemFree:          160400 kB
MemAvailable:    2971032 kB
Buffers:          120904 kB
Cached:          2417812 kB
Active(anon):      29404 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
`;

const STAT_1 = `cpu  1000 50 400 8000 100 0 20 30 0 0
cpu0 500 25 200 4000 50 0 10 15 0 0
intr 123456 0 0
ctxt 987654
btime 1764200000
`;
// 1 s later on 2 cores (200 ticks): 60 user + 10 system + 10 steal busy, 110 idle + 10 iowait.
const STAT_2 = `cpu  1060 50 410 8110 110 0 20 40 7 0
cpu0 530 25 205 4055 55 0 10 20 3 0
`;

describe("/proc parsers", () => {
  it("CPU: busy share between two /proc/stat reads; iowait counts as idle, steal as busy, guest is not counted twice", () => {
    const before = parseProcStat(STAT_1);
    const after = parseProcStat(STAT_2);
    expect(before).toEqual({ total: 1000 + 50 + 400 + 8000 + 100 + 20 + 30, idle: 8100 });
    expect(cpuUsageBetween(before, after)).toBe(40);
    expect(cpuUsageBetween(after, after)).toBeNull();
    expect(() => parseProcStat("intr 1 2 3\n")).toThrow(/no aggregate cpu line/);
  });

  it("memory: used is MemTotal - MemAvailable, in bytes; without MemAvailable (old kernels) free + buffers + cache is available", () => {
    expect(parseMeminfo(MEMINFO)).toEqual({ usedBytes: (3884328 - 2971032) * 1024, totalBytes: 3884328 * 1024 });
    const old = MEMINFO.replace(/^MemAvailable:.*\n/m, "");
    expect(parseMeminfo(old)).toEqual({ usedBytes: (3884328 - 160400 - 120904 - 2417812) * 1024, totalBytes: 3884328 * 1024 });
    expect(() => parseMeminfo("MemFree: 1 kB\n")).toThrow(/no MemTotal/);
  });

  it("uptime: the first figure, whole seconds", () => {
    expect(parseUptime("13869.96 1898.75\n")).toBe(13869);
    expect(() => parseUptime("")).toThrow(/unreadable/);
  });

  it("disk: as df counts it, used = (blocks - bfree) * bsize (reserved blocks are used), total = blocks * bsize", () => {
    expect(diskFigures({ bsize: 4096, blocks: 1000, bfree: 300 })).toEqual({ usedBytes: 700 * 4096, totalBytes: 1000 * 4096 });
  });
});

describe("HostMetrics on a fixture /proc", () => {
  it("the first CPU read primes and answers the average since boot; the next answers the share since it", async () => {
    const procRoot = fixtureTree({ stat: STAT_1, meminfo: MEMINFO, uptime: "3600.52 7000.00\n" });
    const metrics = new HostMetrics({ procRoot, diskPath: procRoot });
    const first = await metrics.sample();
    expect(first).toMatchObject({ cpuUsagePercent: 15.6, memoryUsedBytes: (3884328 - 2971032) * 1024, memoryTotalBytes: 3884328 * 1024, uptimeSeconds: 3600 });
    expect(first.diskTotalBytes).toBeGreaterThan(0);
    writeFileSync(path.join(procRoot, "stat"), STAT_2);
    expect(await metrics.cpuUsagePercent()).toBe(40);
    // no tick passed between two reads: the last figure stands rather than a division by zero
    expect(await metrics.cpuUsagePercent()).toBe(40);
  });

  it("a missing /proc file is an error naming the file, not a figure of zero", async () => {
    const metrics = new HostMetrics({ procRoot: fixtureTree({}) });
    await expect(metrics.sample()).rejects.toThrow(/stat|meminfo|uptime/);
  });
});

/** A machine as node:os would describe it. */
const system = (overrides: Partial<SystemInfo> = {}): SystemInfo => ({
  arch: () => "arm64",
  release: () => "6.1.0-rpi7-rpi-v8",
  hostname: () => "gateway-7",
  availableParallelism: () => 4,
  totalmem: () => 8 * 1024 ** 3,
  networkInterfaces: () => ({
    lo: [{ address: "127.0.0.1", netmask: "255.0.0.0", family: "IPv4", mac: "00:00:00:00:00:00", internal: true, cidr: "127.0.0.1/8" }],
    docker0: [{ address: "172.17.0.1", netmask: "255.255.0.0", family: "IPv4", mac: "02:42:ac:11:00:01", internal: false, cidr: "172.17.0.1/16" }],
    eth0: [
      { address: "fe80::1", netmask: "ffff:ffff:ffff:ffff::", family: "IPv6", mac: "dc:a6:32:00:00:01", internal: false, cidr: "fe80::1/64", scopeid: 2 },
      { address: "2001:db8::7", netmask: "ffff:ffff:ffff:ffff::", family: "IPv6", mac: "dc:a6:32:00:00:01", internal: false, cidr: "2001:db8::7/64", scopeid: 0 },
      { address: "192.168.1.7", netmask: "255.255.255.0", family: "IPv4", mac: "dc:a6:32:00:00:01", internal: false, cidr: "192.168.1.7/24" },
    ],
  }),
  ...overrides,
});

const OS_RELEASE = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
# a comment
ID=debian
`;

describe("facts", () => {
  it("a Raspberry Pi: os from os-release, model from the device tree (its NUL stripped), the machine's own IPv4 first", async () => {
    const root = fixtureTree({
      "etc/os-release": OS_RELEASE,
      "proc/device-tree/model": "Raspberry Pi 4 Model B Rev 1.4\0",
      "proc/meminfo": MEMINFO,
    });
    const facts = await readFacts({ root, agentVersion: "0.1.0", system: system() });
    expect(facts).toEqual({
      os: "Debian GNU/Linux 12 (bookworm)",
      kernel: "6.1.0-rpi7-rpi-v8",
      arch: "arm64",
      hardwareModel: "Raspberry Pi 4 Model B Rev 1.4",
      ipAddress: "192.168.1.7",
      addresses: "192.168.1.7,2001:db8::7,fe80::1,172.17.0.1",
      hostname: "gateway-7",
      agentVersion: "0.1.0",
      cpuCores: 4,
      memoryTotalBytes: 3884328 * 1024,
    });
  });

  it("a PC: the model from DMI vendor and product; os-release from /usr/lib when /etc has none; no address gives null", async () => {
    const root = fixtureTree({
      "usr/lib/os-release": 'NAME="Ubuntu"\nVERSION="24.04 LTS (Noble Numbat)"\n',
      "sys/class/dmi/id/sys_vendor": "Dell Inc.\n",
      "sys/class/dmi/id/product_name": "OptiPlex 3000\n",
    });
    const facts = await readFacts({ root, agentVersion: "0.1.0", system: system({ arch: () => "x64", networkInterfaces: () => ({}) }) });
    expect(facts).toMatchObject({ os: "Ubuntu 24.04 LTS (Noble Numbat)", arch: "amd64", hardwareModel: "Dell Inc. OptiPlex 3000", ipAddress: null, addresses: "", memoryTotalBytes: 8 * 1024 ** 3 });
  });

  it("a machine with neither device tree nor DMI reports hardwareModel null", async () => {
    const facts = await readFacts({ root: fixtureTree({ "etc/os-release": OS_RELEASE }), agentVersion: "0.1.0", system: system() });
    expect(facts.hardwareModel).toBeNull();
  });

  it.each([
    ["x64", "amd64"],
    ["arm64", "arm64"],
    ["arm", "arm"],
    ["riscv64", "riscv64"],
    ["ppc64", "ppc64"],
  ])("architecture %s is reported as %s", (nodeArch, reported) => {
    expect(serviceArch(nodeArch)).toBe(reported);
  });

  it("os-release: quotes and escapes as os-release(5) writes them", () => {
    expect(parseOsRelease(`A="x \\"y\\" \\$z"\nB='single'\nC=bare\n\nnot a line\n`)).toEqual({ A: 'x "y" $z', B: "single", C: "bare" });
  });

  it("the model is not repeated when the product name starts with the vendor", () => {
    expect(hardwareModelFrom({ dmiVendor: "LENOVO", dmiProduct: "LENOVO ThinkCentre M70q" })).toBe("LENOVO ThinkCentre M70q");
    expect(hardwareModelFrom({ dmiVendor: "QEMU", dmiProduct: null })).toBe("QEMU");
  });

  it("every value fits the service's fact schema, however many addresses and however long the os name", async () => {
    const many = Array.from({ length: 200 }, (_, i) => ({ address: `10.0.${i >> 8}.${i & 255}`, netmask: "255.0.0.0", family: "IPv4" as const, mac: "", internal: false, cidr: null }));
    const root = fixtureTree({ "etc/os-release": `PRETTY_NAME="${"x".repeat(5000)}"\n` });
    const facts = await readFacts({ root, agentVersion: "0.1.0", system: system({ networkInterfaces: () => ({ eth0: many }) }) });
    const addresses = String(facts.addresses);
    expect(addresses.length).toBeLessThanOrEqual(1000);
    expect(addresses.length).toBeGreaterThan(900);
    // only whole addresses: every one listed is one the machine has
    for (const address of addresses.split(",")) expect(many.map((m) => m.address)).toContain(address);
    expect(String(facts.os)).toHaveLength(1000);
    for (const [key, value] of Object.entries(facts)) {
      expect(key).toMatch(FACT_KEY);
      expect(value === null || ["string", "number", "boolean"].includes(typeof value)).toBe(true);
      if (typeof value === "string") expect(value.length).toBeLessThanOrEqual(1000);
    }
    expect(() => fitFacts({ __proto__x: 1 })).toThrow(/does not fit/);
    expect(joinBounded(["aaa", "bbb", "ccc"], 7)).toBe("aaa,bbb");
  });

  it("addresses: loopback is left out; container bridges come after the machine's own interfaces", () => {
    expect(addressFacts(system().networkInterfaces())).toEqual({ ipAddress: "192.168.1.7", addresses: "192.168.1.7,2001:db8::7,fe80::1,172.17.0.1" });
  });
});

describe("on this machine", () => {
  const sh = (command: string) => execFileSync("sh", ["-c", command], { encoding: "utf8" }).trim();

  it("facts agree with uname, hostname and /etc/os-release as the shell reads them", async () => {
    const facts = await readFacts({ agentVersion: "0.1.0" });
    expect(facts.os).toBe(sh(". /etc/os-release && echo \"$PRETTY_NAME\""));
    expect(facts.kernel).toBe(sh("uname -r"));
    expect(facts.arch).toBe({ x86_64: "amd64", aarch64: "arm64", armv7l: "arm", riscv64: "riscv64" }[sh("uname -m")]);
    expect(facts.hostname).toBe(sh("hostname"));
    expect(facts.cpuCores).toBe(Number(sh("nproc")));
    expect(facts.memoryTotalBytes).toBe(os.totalmem());
  });

  it("memory within 5 % of free, uptime within 2 s of the kernel's sysinfo, disk within 1 % of df, CPU in range", async () => {
    const metrics = new HostMetrics();
    await metrics.cpuUsagePercent();
    const sample = await metrics.sample();
    // `free -b`: "Mem:  total used free shared buff/cache available"
    const [total, , , , , available] = sh("free -b | awk '/^Mem:/ {print $2, $3, $4, $5, $6, $7}'").split(" ").map(Number);
    const [dfTotal, dfUsed] = sh("df -B1 --output=size,used / | tail -1").split(/\s+/).map(Number);
    const uptime = os.uptime();

    expect(sample.memoryTotalBytes).toBe(total);
    expect(Math.abs(sample.memoryUsedBytes - (total - available))).toBeLessThanOrEqual(0.05 * (total - available));
    expect(Math.abs(sample.uptimeSeconds - uptime)).toBeLessThanOrEqual(2);
    expect(Math.abs(sample.diskTotalBytes - dfTotal)).toBeLessThanOrEqual(0.01 * dfTotal);
    expect(Math.abs(sample.diskUsedBytes - dfUsed)).toBeLessThanOrEqual(0.01 * dfUsed);
    expect(sample.cpuUsagePercent).toBeGreaterThanOrEqual(0);
    expect(sample.cpuUsagePercent).toBeLessThanOrEqual(100);
  });

  it("CPU: a core kept busy between two reads shows as at least its share of the machine", async () => {
    const metrics = new HostMetrics();
    await metrics.cpuUsagePercent();
    const until = Date.now() + 300;
    while (Date.now() < until) Math.sqrt(Math.random());
    // this process held one of the machine's CPUs the whole time (others may have used the rest)
    expect(await metrics.cpuUsagePercent()).toBeGreaterThanOrEqual((100 / os.availableParallelism()) * 0.8);
  });
});
