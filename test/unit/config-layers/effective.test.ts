// Property tests of layer precedence and templating (src/modules/config-layers/effective.ts)
// against a small reference model: random layers (the organization's default, selector
// layers at random orders, the device's override), random labels and variables, and the
// model's answer for every variable and file: its value, the layer it came from, the layers it
// overrode, or the conflict / missing name the computation must refuse with.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  ConfigurationError, computeEffective, prepareLayers, revisionOf, revisionsOf, type LayerState,
} from "../../../src/modules/config-layers/effective.js";

const DEVICE = { id: "00000000-0000-4000-8000-000000000001", name: "dev-1" };
const NAMES = ["V1", "V2", "V3", "V4"];
const PATHS = ["/etc/fleet/a.conf", "/etc/fleet/b.conf"];
const KEYS = ["site", "tier"];
const VALUES = ["x", "y"];

const labelsArb = fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 2 });
const literal = fc.stringMatching(/^[a-z0-9]{0,6}$/);

interface Spec {
  kind: LayerState["kind"];
  order: number | null;
  selector: Record<string, string> | null;
  deviceId: string | null;
  variables: Record<string, string>;
  files: string[];
}

const contentArb = { variables: fc.dictionary(fc.constantFrom(...NAMES), literal, { maxKeys: 4 }), files: fc.subarray(PATHS) };
const layersArb = fc.record({
  organization: fc.option(fc.record(contentArb), { nil: null }),
  selectors: fc.array(fc.record({ order: fc.integer({ min: 0, max: 3 }), selector: labelsArb, ...contentArb }), { maxLength: 5 }),
  device: fc.option(fc.record({ ...contentArb, forThisDevice: fc.boolean() }), { nil: null }),
}).map(({ organization, selectors, device }): Spec[] => [
  ...(organization ? [{ kind: "organization" as const, order: null, selector: null, deviceId: null, ...organization }] : []),
  ...selectors.map((s) => ({ kind: "selector" as const, order: s.order, selector: s.selector, deviceId: null, variables: s.variables, files: s.files })),
  ...(device ? [{ kind: "device" as const, order: null, selector: null, deviceId: device.forThisDevice ? DEVICE.id : "00000000-0000-4000-8000-000000000002", variables: device.variables, files: device.files }] : []),
]);

function toLayers(specs: Spec[]): LayerState[] {
  return specs.map((s, i) => ({
    id: `00000000-0000-4000-9000-${String(i).padStart(12, "0")}`,
    name: `layer-${i}`,
    kind: s.kind, order: s.order, selector: s.selector, deviceId: s.deviceId, revision: i + 1,
    variables: s.variables,
    files: s.files.map((path) => ({ path, content: `${path} from layer-${i}`, mode: "0644" })),
    secrets: {},
    activation: null,
  }));
}

/** The model: which layers apply, in which order, and who wins each name and path. */
function model(layers: LayerState[], labels: Record<string, string>) {
  const matches = (l: LayerState) =>
    l.kind === "organization" || (l.kind === "device" ? l.deviceId === DEVICE.id : Object.entries(l.selector!).every(([k, v]) => labels[k] === v));
  const applying = layers.filter(matches);
  const selectors = applying.filter((l) => l.kind === "selector");
  const orders = selectors.map((l) => l.order);
  if (new Set(orders).size !== orders.length) return { conflict: true as const };
  const rank = (l: LayerState) => (l.kind === "organization" ? -Infinity : l.kind === "device" ? Infinity : l.order!);
  const ordered = [...applying].sort((a, b) => rank(a) - rank(b));
  const winners = (has: (l: LayerState) => boolean) => {
    const setters = ordered.filter(has);
    return setters.length ? { winner: setters.at(-1)!, overrode: setters.slice(0, -1).reverse().map((l) => l.name) } : null;
  };
  const variables: Record<string, { value: string; layer: string; overrode: string[] }> = {};
  for (const name of NAMES) {
    const w = winners((l) => Object.hasOwn(l.variables, name));
    if (w) variables[name] = { value: w.winner.variables[name], layer: w.winner.name, overrode: w.overrode };
  }
  const files: Record<string, { layer: string; overrode: string[] }> = {};
  for (const path of PATHS) {
    const w = winners((l) => l.files.some((f) => f.path === path));
    if (w) files[path] = { layer: w.winner.name, overrode: w.overrode };
  }
  return { conflict: false as const, layers: ordered.map((l) => l.name), variables, files };
}

describe("precedence", () => {
  it("each variable and file comes from the highest applying layer, naming the ones it overrode; two matching layers at one order are a conflict", () => {
    fc.assert(
      fc.property(layersArb, labelsArb, (specs, labels) => {
        const layers = toLayers(specs);
        const expected = model(layers, labels);
        const device = { ...DEVICE, labels, facts: {} };
        if (expected.conflict) {
          expect(() => computeEffective(prepareLayers(layers), device)).toThrow(ConfigurationError);
          return;
        }
        const got = computeEffective(prepareLayers(layers), device);
        expect(got.layers.map((l) => l.layer)).toEqual(expected.layers);
        expect(Object.fromEntries(Object.entries(got.variables).map(([n, v]) => [n, { value: v.value, layer: v.layer, overrode: v.overrode.map((o) => o.layer) }]))).toEqual(expected.variables);
        expect(Object.fromEntries(got.files.map((f) => [f.path, { layer: f.layer, overrode: f.overrode.map((o) => o.layer) }]))).toEqual(expected.files);
        for (const f of got.files) expect(Buffer.from(f.contentBase64, "base64").toString()).toBe(`${f.path} from ${f.layer}`);
      }),
      { numRuns: 500 },
    );
  });

  it("the revision depends on the configuration, not on the order the layers were read in", () => {
    fc.assert(
      fc.property(layersArb, labelsArb, fc.integer(), (specs, labels, seed) => {
        const layers = toLayers(specs);
        if (model(layers, labels).conflict) return;
        const shuffled = [...layers].sort((a, b) => ((a.revision * 7919 + seed) % 13) - ((b.revision * 7919 + seed) % 13));
        const device = { ...DEVICE, labels, facts: {} };
        expect(computeEffective(prepareLayers(shuffled), device).revision).toBe(computeEffective(prepareLayers(layers), device).revision);
      }),
      { numRuns: 200 },
    );
  });
});

describe("sharing across devices", () => {
  it("revisionsOf (devices alike computed once) answers what each device computed alone answers", () => {
    const templated = fc.constantFrom("{{ device.labels.site }}", "{{ device.name }}", "{{ device.facts.arch }}", "plain", "{{ device.labels.tier }}-x");
    fc.assert(
      fc.property(
        layersArb, fc.array(templated, { minLength: 1, maxLength: 3 }),
        fc.array(fc.record({ labels: labelsArb, name: fc.constantFrom("a", "b"), arch: fc.option(fc.constantFrom("arm64", "x86_64"), { nil: undefined }) }), { minLength: 1, maxLength: 12 }),
        (specs, templates, deviceSpecs) => {
          const layers = toLayers(specs);
          layers.forEach((l, i) => { l.variables = { ...l.variables, [`T${i}`]: templates[i % templates.length] }; });
          const prepared = prepareLayers(layers);
          const devices = deviceSpecs.map((d, i) => ({ id: i === 0 ? DEVICE.id : `00000000-0000-4000-8000-00000000010${i % 10}`, name: d.name, labels: d.labels, facts: d.arch ? { arch: d.arch } : {} }));
          expect(revisionsOf(prepared, devices)).toEqual(devices.map((d) => revisionOf(prepared, d)));
        },
      ),
      { numRuns: 300 },
    );
  });
});

// Templating: values made of literal pieces, {{ vars.N }}, {{ device.labels.K }},
// {{ device.facts.arch }} and {{ device.name }}, evaluated by the model recursively.
type Token = { text: string } | { variable: string } | { label: string } | { fact: string } | { deviceName: true };
const tokenArb: fc.Arbitrary<Token> = fc.oneof(
  literal.map((text) => ({ text })),
  fc.constantFrom(...NAMES, "UNDEFINED").map((variable) => ({ variable })),
  fc.constantFrom(...KEYS).map((label) => ({ label })),
  fc.constantFrom("arch", "kernel").map((fact) => ({ fact })),
  fc.constant({ deviceName: true as const }),
);
const render = (tokens: Token[]) => tokens.map((t) => ("text" in t ? t.text : "variable" in t ? `{{ vars.${t.variable} }}` : "label" in t ? `{{device.labels.${t.label}}}` : "fact" in t ? `{{ device.facts.${t.fact} }}` : "{{ device.name }}")).join("");

type Outcome = { value: string } | { missing: string } | { cycle: true };

function evaluate(definitions: Record<string, Token[]>, labels: Record<string, string>, facts: Record<string, string>, name: string, stack: string[] = []): Outcome {
  if (stack.includes(name)) return { cycle: true };
  let value = "";
  for (const t of definitions[name]) {
    if ("text" in t) value += t.text;
    else if ("deviceName" in t) value += DEVICE.name;
    else if ("label" in t) {
      if (!(t.label in labels)) return { missing: `device.labels.${t.label}` };
      value += labels[t.label];
    } else if ("fact" in t) {
      if (!(t.fact in facts)) return { missing: `device.facts.${t.fact}` };
      value += facts[t.fact];
    } else {
      if (!(t.variable in definitions)) return { missing: `vars.${t.variable}` };
      const inner = evaluate(definitions, labels, facts, t.variable, [...stack, name]);
      if (!("value" in inner)) return inner;
      value += inner.value;
    }
  }
  return { value };
}

describe("templating", () => {
  it("renders variables from the device and each other, and refuses a missing name or a cycle naming the layer and key", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom(...NAMES), fc.array(tokenArb, { maxLength: 4 }), { minKeys: 1, maxKeys: 4 }),
        labelsArb,
        fc.dictionary(fc.constantFrom("arch", "kernel"), literal, { maxKeys: 2 }),
        (definitions, labels, facts) => {
          const variables = Object.fromEntries(Object.entries(definitions).map(([n, tokens]) => [n, render(tokens)]));
          const [layer] = toLayers([{ kind: "organization", order: null, selector: null, deviceId: null, variables, files: [] }]);
          const outcomes = Object.fromEntries(Object.keys(definitions).map((n) => [n, evaluate(definitions, labels, facts, n)]));
          const failing = Object.values(outcomes).find((o) => !("value" in o));
          const run = () => computeEffective(prepareLayers([layer]), { ...DEVICE, labels, facts });
          if (failing) {
            let error: unknown;
            try {
              run();
            } catch (err) {
              error = err;
            }
            expect(error).toBeInstanceOf(ConfigurationError);
            const message = (error as Error).message;
            expect(message).toMatch(/^layer "layer-0" variables\.V\d: /);
            // the name the first failing variable lacks, or the cycle, is what the message names
            const firstFailing = Object.keys(definitions).sort().map((n) => outcomes[n]).find((o) => !("value" in o))!;
            if ("missing" in firstFailing && !Object.values(outcomes).some((o) => "cycle" in o)) expect(message).toContain(`{{ ${firstFailing.missing} }}`);
            return;
          }
          const got = run();
          for (const [name, outcome] of Object.entries(outcomes)) expect(got.variables[name].value).toBe((outcome as { value: string }).value);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("renders files with the device's variables; a file with template false is written as it is", () => {
    const layers = toLayers([{ kind: "organization", order: null, selector: null, deviceId: null, variables: { URL: "mqtts://{{ device.labels.site }}" }, files: [] }]);
    layers[0].files = [
      { path: "/etc/fleet/t.conf", content: "url={{ vars.URL }} on {{ device.name }}", mode: "0644" },
      { path: "/etc/fleet/raw.tmpl", content: "{{ .Values.x }}", mode: "0644", template: false },
    ];
    const got = computeEffective(prepareLayers(layers), { ...DEVICE, labels: { site: "berlin" }, facts: {} });
    expect(got.files.map((f) => Buffer.from(f.contentBase64, "base64").toString())).toEqual(["{{ .Values.x }}", "url=mqtts://berlin on dev-1"]);
  });

  it("secrets are delivered as values, but revisions and views count them by fingerprint only", () => {
    const [layer] = toLayers([{ kind: "organization", order: null, selector: null, deviceId: null, variables: { DSN: "user:{{ vars.PASSWORD }}@db" }, files: [] }]);
    layer.secrets = { PASSWORD: { value: "hunter2", fingerprint: "secret:f1" } };
    const prepared = prepareLayers([layer]);
    const device = { ...DEVICE, labels: {}, facts: {} };
    const hidden = computeEffective(prepared, device);
    expect(hidden.variables.DSN).toMatchObject({ value: "user:secret:f1@db", secret: true });
    expect(JSON.stringify(hidden)).not.toContain("hunter2");
    const revealed = computeEffective(prepared, device, { reveal: true });
    expect(revealed.variables.DSN.value).toBe("user:hunter2@db");
    expect(revealed.revision).toBe(hidden.revision);
    // another value, another fingerprint: another revision
    layer.secrets.PASSWORD = { value: "hunter3", fingerprint: "secret:f2" };
    expect(computeEffective(prepareLayers([layer]), device).revision).not.toBe(hidden.revision);
  });
});
