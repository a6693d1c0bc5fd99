// Where the time of a CPU profile went: self time by function and by package (express,
// trpc-to-openapi, zod, jose, pg, PGlite, ...). `npx tsx bench/support/profile-summary.ts <file.cpuprofile> [top]`.
import fs from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: profile-summary.ts <file.cpuprofile> [top]");
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);

export function packageOf(url: string, name: string): string {
  if (!url) return name === "(garbage collector)" ? "(gc)" : name === "(idle)" || name === "(program)" ? name : "(native)";
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.startsWith("node:")) return `node:${url.slice(5).split("/")[0]}`;
  const own = /\/(src|bench)\/(.*)$/.exec(url);
  if (own) return `${own[1]}/${own[2].split("/").slice(0, 2).join("/")}`;
  return url;
}

const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
for (const [id, us] of self) {
  const n = byId.get(id)!;
  const pkg = packageOf(n.callFrame.url, n.callFrame.functionName);
  const key = `${n.callFrame.functionName || "(anonymous)"} ${pkg}:${n.callFrame.lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
}
const top = Number(topArg ?? 25);
const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)} %`;
console.log(`${(total / 1e6).toFixed(1)} s sampled`);
console.log("\nself time by package:");
for (const [k, v] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
console.log("\nself time by function:");
for (const [k, v] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
