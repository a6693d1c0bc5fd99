// `npm run samples`: the offline way to something deployable. The script (scripts/samples.ts,
// run as a child process like npm runs it) serves the bundled sample applications as a Git
// repository on loopback, prints the URL to add and, given a key, adds it as a Git registry of
// the key's organization and syncs it: the catalog then holds the samples. Ctrl-C stops it.
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { eventually, ROOT } from "../../support/server-process.js";
import { freePort } from "../../support/oci-registry.js";

let h: Harness;
let acme: Tenant;
let child: ChildProcess | undefined;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Samples");
});

afterAll(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  await h?.close();
});

function run(args: string[], env: Record<string, string> = {}) {
  const output: string[] = [];
  const proc = spawn(process.execPath, ["--import", "tsx", "scripts/samples.ts", ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let buffered = "";
  const collect = (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const lines = buffered.split("\n");
    buffered = lines.pop()!;
    output.push(...lines);
  };
  proc.stdout!.on("data", collect);
  proc.stderr!.on("data", collect);
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  return { proc, output, exited };
}

describe("npm run samples", () => {
  it("serves the samples, adds them as a Git registry with the key given, and the catalog holds them; Ctrl-C stops it", async () => {
    const samples = run(["--port", "0", "--url", h.url, "--key", acme.key]);
    child = samples.proc;
    const added = await eventually(async () => samples.output.find((l) => l.includes("added to")), 60_000, `the registry added:\n${samples.output.join("\n")}`);
    expect(added).toMatch(/as Git registry 'sample apps' \(id [0-9a-f-]{36}\) and synced at [0-9a-f]{7}: 5 manifests, 5 imported, 0 errors, 0 rejected/);
    const served = samples.output.find((l) => l.startsWith("serving the sample applications"))!;
    const url = /at (http:\/\/127\.0\.0\.1:\d+\/demo-apps\.git)$/.exec(served)?.[1];
    expect(url).toBeDefined();

    // the registry, as stored, points at the printed URL; the catalog holds the four applications
    const registries = await h.api("GET", "/api/v1/registries/git", { key: acme.key });
    expect(registries.body.items.map((r: { url: string }) => r.url)).toEqual([url]);
    const apps = await h.api("GET", "/api/v1/applications?limit=100", { key: acme.key });
    expect(apps.body.items.map((a: { key: string; versionCount: number }) => `${a.key} ${a.versionCount}`).sort())
      .toEqual(["mqtt-broker 1", "plc-connector 1", "telemetry-forwarder 1", "vision-gateway 2"]);

    // a sync later, while it serves, finds the same commit
    const again = await h.api("POST", `/api/v1/registries/git/${registries.body.items[0].id}/sync`, { key: acme.key });
    expect(again.body).toMatchObject({ success: true, applicationsFound: 5, applicationsImported: 0 });

    samples.proc.kill("SIGINT");
    expect(await samples.exited).toBe(0);
    expect(samples.output.at(-1)).toBe("stopped");
  }, 180_000);

  it("without a key it prints the URL to add and how to let it add it", async () => {
    const samples = run(["--port", "0"]);
    child = samples.proc;
    await eventually(async () => samples.output.some((l) => l.startsWith("Ctrl-C stops serving")), 60_000, "the printout");
    expect(samples.output.join("\n")).toMatch(/add it as a Git registry: URL http:\/\/127\.0\.0\.1:\d+\/demo-apps\.git, branch main, path \/apps/);
    expect(samples.output.join("\n")).toContain("npm run samples -- --url http://localhost:3000 --key fm_...");
    samples.proc.kill("SIGTERM");
    expect(await samples.exited).toBe(0);
  }, 120_000);

  it("without --url it adds the registry to the service on this machine's PORT, as the service reads it", async () => {
    const other = await h.createTenant("Acme Samples On PORT");
    const samples = run(["--port", "0", "--key", other.key], { PORT: new URL(h.url).port });
    child = samples.proc;
    const added = await eventually(async () => samples.output.find((l) => l.includes("added to") || l.includes("could not add")), 60_000, `the registry added:\n${samples.output.join("\n")}`);
    expect(added).toMatch(new RegExp(`^  added to http://localhost:${new URL(h.url).port} as Git registry 'sample apps'`));
    const registries = await h.api("GET", "/api/v1/registries/git", { key: other.key });
    expect(registries.body.items.map((r: { name: string }) => r.name)).toEqual(["sample apps"]);
    samples.proc.kill("SIGTERM");
    expect(await samples.exited).toBe(0);
  }, 120_000);

  it("when no service answers, it says which address it tried, from where, and what to do", async () => {
    const closed = await freePort();
    const samples = run(["--port", "0", "--key", "fm_whatever"], { PORT: String(closed) });
    child = samples.proc;
    const failed = await eventually(async () => samples.output.find((l) => l.includes("could not add")), 60_000, `the failure:\n${samples.output.join("\n")}`);
    expect(failed).toBe(`  could not add it to http://localhost:${closed}: nothing answers there (ECONNREFUSED; the address from PORT=${closed}). ` +
      "Is the service running? Give its address with --url http://host:port, or its port with PORT=<port>");
    expect(samples.output.join("\n")).not.toContain("fetch failed");
    samples.proc.kill("SIGTERM");
    expect(await samples.exited).toBe(0);
  }, 120_000);

  it("--help prints the usage, and only it, and succeeds", async () => {
    const samples = run(["--help"]);
    expect(await samples.exited).toBe(0);
    expect(samples.output[0]).toBe("usage: npm run samples -- [--port 3999] [--url http://localhost:3000 --key fm_...]");
    expect(samples.output.join("\n")).not.toMatch(/unknown option|serving/i);
  }, 60_000);
});
