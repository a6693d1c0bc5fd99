// The effective configuration of a fleet computed as a rollout will (issue 48): the
// organization's layers read once and prepared, then every device computed from them in
// memory (src/modules/config-layers/effective.ts). Measures the time per device and the
// memory the prepared layers and the results take. No database: the statement that reads the
// layers runs once per rollout and is not what grows with the fleet.
//   BENCH_CONFIG_DEVICES (100000)  BENCH_CONFIG_LAYERS (50)
import v8 from "node:v8";
import vm from "node:vm";
import { computeEffective, prepareLayers, revisionOf, revisionsOf, type LayerState } from "../src/modules/config-layers/effective.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
const heapMiB = () => {
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

const DEVICES = Number(process.env.BENCH_CONFIG_DEVICES ?? 100_000);
const LAYERS = Number(process.env.BENCH_CONFIG_LAYERS ?? 50);
const SITES = 40;
const TIERS = ["pilot", "canary", "stable"];
const HW = ["rpi4", "rpi5", "nuc", "jetson", "x86"];

// Layers as an operator would have them: the default, one per site, per tier and per hardware
// model, at orders that never collide on one device; every one with variables and a file, half
// of them templated from labels and other variables.
function layers(): LayerState[] {
  const out: LayerState[] = [];
  const add = (name: string, kind: LayerState["kind"], order: number | null, selector: Record<string, string> | null, i: number) => out.push({
    id: `00000000-0000-4000-9000-${String(i).padStart(12, "0")}`, name, kind, order, selector, deviceId: null, revision: 1,
    variables: Object.fromEntries(Array.from({ length: 10 }, (_, k) => [`VAR_${i % 7}_${k}`, k % 2 ? `value-${i}-${k}` : `{{ device.labels.site }}-{{ vars.BASE }}-${k}`])),
    files: [{ path: `/etc/fleet/${name}.conf`, content: `# ${name}\nsite={{ device.labels.site }}\nurl={{ vars.MQTT_URL }}\n${"x".repeat(2000)}\n`, mode: "0644" }],
    secrets: { [`TOKEN_${i}`]: { value: `secret-${i}`, fingerprint: `secret:${i}` } },
    activation: i % 5 === 0 ? { command: ["systemctl", "reload", `svc-${i}`] } : null,
  });
  add("defaults", "organization", null, null, 0);
  out[0].variables.BASE = "base";
  out[0].variables.MQTT_URL = "mqtts://{{ device.labels.site }}.broker:8883";
  let i = 1;
  for (let s = 0; s < SITES && out.length < LAYERS; s++) add(`site-${s}`, "selector", 10, { site: `site-${s}` }, i++);
  for (const t of TIERS) if (out.length < LAYERS) add(`tier-${t}`, "selector", 20, { tier: t }, i++);
  for (const m of HW) if (out.length < LAYERS) add(`hw-${m}`, "selector", 30, { hw: m }, i++);
  for (let extra = 0; out.length < LAYERS; extra++) add(`extra-${extra}`, "selector", 40 + extra, { site: `site-${extra % SITES}`, tier: "pilot" }, i++);
  return out;
}

const devices = Array.from({ length: DEVICES }, (_, d) => ({
  id: `00000000-0000-4000-8000-${String(d).padStart(12, "0")}`,
  name: `device-${d}`,
  labels: { site: `site-${d % SITES}`, tier: TIERS[d % 3], hw: HW[d % 5] },
  facts: { arch: d % 2 ? "aarch64" : "x86_64" },
}));

const before = heapMiB();
let t = performance.now();
const prepared = prepareLayers(layers());
const prepareMs = performance.now() - t;
const preparedMiB = heapMiB() - before;

t = performance.now();
const results = revisionsOf(prepared, devices);
const allMs = performance.now() - t;
const peak = process.memoryUsage().heapUsed;
const revisions = results.flatMap((r) => ("revision" in r ? [r.revision] : []));
const errors = results.length - revisions.length;

// the same without sharing: every device rendered on its own (what a template reading
// {{ device.name }} in every layer would cost), on a sample
const SAMPLE = Math.min(DEVICES, 2000);
t = performance.now();
for (let d = 0; d < SAMPLE; d++) revisionOf(prepared, devices[d]);
const eachMs = performance.now() - t;
const resultsMiB = heapMiB() - before - preparedMiB;

// one device in full (what a heartbeat answers it: secrets revealed), for the per-answer cost
t = performance.now();
const full = computeEffective(prepared, devices[0], { reveal: true });
const fullMs = performance.now() - t;

console.log(JSON.stringify({
  devices: DEVICES, layers: prepared.length, distinctRevisions: new Set(revisions).size, errors,
  prepareMs: +prepareMs.toFixed(1), preparedMiB: +preparedMiB.toFixed(2),
  allDevicesMs: +allMs.toFixed(0), perDeviceUs: +((allMs * 1000) / DEVICES).toFixed(1),
  unsharedPerDeviceUs: +((eachMs * 1000) / SAMPLE).toFixed(1),
  revisionsMiB: +resultsMiB.toFixed(2), peakHeapMiB: +(peak / 2 ** 20).toFixed(0),
  fullAnswer: { ms: +fullMs.toFixed(2), variables: Object.keys(full.variables).length, files: full.files.length },
}, null, 2));
