// `fleet` as a user runs it: the CLI as a subprocess (cli/bin/fleet.js, no terminal unless
// tmux gives it one) against a real service process with simulated devices (one service for
// the file). Generated commands of several modules with -o json/yaml/name parsed, the exit code
// of each class of failure, sign-in and a context switch between two organizations, logout
// revoking the session, bulk label/unlabel/delete by selector, logs -f, get --watch, deploy
// --wait (0 on a completed rollout, 8 on one its failure threshold paused), the rollout moves,
// completion, and `fleet rollout watch` in a real terminal (tmux).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { ADMIN, startConsoleService, type ConsoleService, type SimulatedFleet } from "../support/console-service.js";
import { eventually } from "../support/server-process.js";
import { missingPeerLine, peerAvailable } from "../support/peers.js";
import { FLEET_BIN, fleetEnv, runFleet, startFleet, type RunningFleet } from "../support/fleet-cli.js";
import { importApplication } from "../browser/deployments/support.js";
import type { GitServer } from "../support/git-server/index.js";

const BIN = FLEET_BIN;
const EXIT = { ok: 0, usage: 2, auth: 3, permission: 4, notFound: 5, conflict: 6, rolloutFailed: 8 };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A home directory of its own: a user on their machine (config in $XDG_CONFIG_HOME/fleet). */
function home(name: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `fleet-cli-${name}-`));
}

function envOf(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  return fleetEnv(dir, extra);
}

/** `input`: what stdin gets before it ends; null keeps it open (for a conversation over stdio). */
function start(dir: string, args: string[], extra: Record<string, string> = {}, input?: string | null): RunningFleet {
  return startFleet(envOf(dir, extra), args, input);
}

function fleet(dir: string, args: string[], extra: Record<string, string> = {}, input?: string): Promise<Run> {
  return runFleet(envOf(dir, extra), args, input);
}

/** `fleet ... -o json`, parsed; fails the test with stderr on a non-zero exit. */
async function json<T = any>(dir: string, args: string[], extra: Record<string, string> = {}): Promise<T> {
  const run = await fleet(dir, [...args, "-o", "json"], extra);
  expect(run.code, `fleet ${args.join(" ")}: ${run.stderr}`).toBe(0);
  return JSON.parse(run.stdout) as T;
}

/** Heartbeats of `fleets` (the simulated devices obey their desired state and report) until `done` settles. */
async function drive(fleets: SimulatedFleet[], done: Promise<unknown>): Promise<void> {
  let finished = false;
  void done.finally(() => (finished = true));
  while (!finished) {
    for (const f of fleets) await f.heartbeat();
    await Promise.race([done, new Promise((r) => setTimeout(r, 100))]);
  }
}

let service: ConsoleService;
let berlin: SimulatedFleet;
let hamburg: SimulatedFleet;
let git: GitServer;
let admin: string;

beforeAll(async () => {
  service = await startConsoleService();
  admin = home("admin");
  // builds cli/dist when the sources are newer (once, before the tests run it in parallel)
  expect((await fleet(admin, ["--version"])).code).toBe(0);
  [berlin, hamburg] = await Promise.all([
    service.enrollFleet({ prefix: "berlin", devices: 3, labels: { site: "berlin" }, deployments: { timeScale: 0, deploymentFailureRate: 0 } }),
    service.enrollFleet({ prefix: "hamburg", devices: 2, labels: { site: "hamburg" }, deployments: { timeScale: 0, deploymentFailureRate: 1 } }),
  ]);
  ({ git } = await importApplication(service, ["1.0.0", "1.1.0"]));
});

afterAll(async () => {
  await git?.close();
  await service?.close();
});

describe("fleet against a service", () => {
  it("signs in with a password without a terminal, never prompting, and keeps the context in a 0600 file", async () => {
    const refused = await fleet(admin, ["login", service.url]);
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toContain("nothing is asked when stdin is not a terminal");
    const login = await fleet(admin, ["login", service.url, "--email", ADMIN.email, "--password-stdin", "--name", "local"], {}, `${ADMIN.password}\n`);
    expect(login.code, login.stderr).toBe(0);
    const file = path.join(admin, ".config", "fleet", "config.yaml");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const config = parseYaml(fs.readFileSync(file, "utf8"));
    expect(config.currentContext).toBe("local");
    expect(config.contexts.local).toMatchObject({ server: service.url, user: ADMIN.email, organization: { slug: "default" } });
    expect(await json(admin, ["context", "list"])).toEqual([expect.objectContaining({ current: true, name: "local", organization: "default", credential: "session" })]);
    // an access token the server refuses is refreshed with the refresh token and saved, also
    // by several fleet processes at once (a refresh token works once: the others take the saved tokens)
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/accessToken: .*/, "accessToken: expired-token"));
    const runs = await Promise.all([1, 2, 3].map(() => fleet(admin, ["devices", "list", "--limit", "1", "-o", "json"])));
    expect(runs.map((r) => [r.code, r.stderr])).toEqual([[0, ""], [0, ""], [0, ""]]);
    const refreshed = parseYaml(fs.readFileSync(file, "utf8")).contexts.local;
    expect(refreshed.accessToken).not.toBe("expired-token");
    expect((await service.api("GET", "/api/v1/tenant/context", { key: null, token: refreshed.accessToken })).status).toBe(200);
  });

  it("runs generated commands of several modules, printing json, yaml, names and tables", async () => {
    const [devices, one, page, all, org, roles, table, token] = await Promise.all([
      json(admin, ["devices", "list", "--labels", "site=berlin"]),
      json(admin, ["devices", "get", berlin.devices[0].deviceId!]),
      // paging: a page, or every page with --all
      json(admin, ["devices", "list", "--limit", "2", "--status", "online,error"]),
      json(admin, ["devices", "list", "--limit", "2", "--all"]),
      // another module, yaml
      fleet(admin, ["organizations", "get-by-slug", "default", "-o", "yaml"]),
      // -o name: one id per line
      fleet(admin, ["roles", "list", "-o", "name"]),
      fleet(admin, ["devices", "list", "--labels", "site=hamburg", "-o", "table"]),
      // a body with a key=value map and an integer
      json(admin, ["enrollment-tokens", "create", "--name", "cli-token", "--labels", "site=munich", "--max-uses", "2"]),
    ]);
    expect(devices.total).toBe(3);
    expect(devices.items.map((d: { id: string }) => d.id).sort()).toEqual(berlin.devices.map((d) => d.deviceId).sort());
    expect(one).toMatchObject({ id: berlin.devices[0].deviceId, labels: { site: "berlin" } });
    expect(page.items).toHaveLength(2);
    expect(page.total).toBe(5);
    expect(all.items).toHaveLength(5);
    expect(parseYaml(org.stdout)).toMatchObject({ id: service.defaultOrg.id, slug: "default" });
    const systemRoles = await service.call("GET", "/api/v1/system-roles");
    expect(roles.stdout.trim().split("\n")).toEqual(expect.arrayContaining(systemRoles.items.map((r: { id: string }) => r.id)));
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+STATUS/);
    expect(table.stdout.trim().split("\n")).toHaveLength(3);
    expect(token).toMatchObject({ name: "cli-token", labels: { site: "munich" }, maxUses: 2 });
    const stored = await service.call("GET", "/api/v1/enrollment-tokens?limit=200");
    expect(stored.items.find((t: { id: string }) => t.id === token.id)).toMatchObject({ labels: { site: "munich" }, maxUses: 2 });
  });

  it("exits with a distinct code per failure and prints the API's message and field on stderr", async () => {
    const viewer = await service.createUser("viewer");
    const viewerHome = home("viewer");
    const [badKey, viewerLogin, missing, invalid, unknownFlag, unknownCommand, created] = await Promise.all([
      fleet(home("ci"), ["devices", "list"], { FLEET_URL: service.url, FLEET_API_KEY: "fm_" + "x".repeat(40) }),
      fleet(viewerHome, ["login", service.url, "--email", viewer.email], { FLEET_PASSWORD: viewer.password }),
      fleet(admin, ["devices", "get", "7d1e2f4a-0000-4000-8000-000000000000"]),
      fleet(admin, ["devices", "list", "--limit", "0"]),
      fleet(admin, ["devices", "list", "--no-such-flag"]),
      fleet(admin, ["devices", "frobnicate"]),
      fleet(admin, ["roles", "create", "--name", "cli-twice", "--permissions", "devices:read"]),
    ]);
    expect(badKey.code).toBe(EXIT.auth);
    expect(badKey.stderr).toMatch(/^error: .+\n {2}\(HTTP 401/);
    expect(missing.code).toBe(EXIT.notFound);
    expect(missing.stderr).toContain("error: Device not found");
    expect(invalid.code).toBe(EXIT.usage);
    expect(invalid.stderr).toMatch(/field limit: /);
    expect(unknownFlag.code).toBe(EXIT.usage);
    expect(unknownCommand.code).toBe(EXIT.usage);
    expect(created.code).toBe(0);
    // a viewer may read but not delete
    expect(viewerLogin.code, viewerLogin.stderr).toBe(0);
    const [forbidden, conflict] = await Promise.all([
      fleet(viewerHome, ["devices", "delete", berlin.devices[0].deviceId!]),
      fleet(admin, ["roles", "create", "--name", "cli-twice", "--permissions", "devices:read"]),
    ]);
    expect(forbidden.code).toBe(EXIT.permission);
    expect(forbidden.stderr).toContain("HTTP 403");
    expect((await service.api("GET", `/api/v1/devices/${berlin.devices[0].deviceId}`)).status).toBe(200);
    expect(conflict.code).toBe(EXIT.conflict);
    expect(conflict.stderr).toContain("HTTP 409");
  });

  it("labels, unlabels and deletes the devices a selector matches, with the count first and --yes off a terminal", async () => {
    const [label] = await Promise.all([
      fleet(admin, ["devices", "label", "tier=edge", "--selector", "site=berlin"]),
      service.enrollFleet({ prefix: "munich", devices: 2, labels: { site: "munich" } }),
    ]);
    expect(label.code, label.stderr).toBe(0);
    expect((await service.call("GET", "/api/v1/devices?labels=tier=edge")).total).toBe(3);
    expect(await json(admin, ["devices", "unlabel", "tier", "-l", "site=berlin"])).toEqual({ matched: 3, updated: 3, skipped: 0 });
    expect((await service.call("GET", "/api/v1/devices?labels=tier=edge")).total).toBe(0);
    const [unconfirmed] = await Promise.all([fleet(admin, ["devices", "delete", "--selector", "site=munich"])]);
    expect(unconfirmed.code).toBe(EXIT.usage);
    expect(unconfirmed.stderr).toContain("2 devices match site=munich");
    expect(unconfirmed.stderr).toContain("--yes");
    expect((await service.call("GET", "/api/v1/devices?labels=site=munich")).total).toBe(2);
    expect(await json(admin, ["devices", "delete", "--selector", "site=munich", "--yes"])).toEqual({ deleted: 2, revokedCertificates: 2 });
    expect((await service.call("GET", "/api/v1/devices?labels=site=munich")).total).toBe(0);
  });

  it("imports the factory's list with devices preauthorize -f (CSV or JSON); a bad entry is named and nothing imported", async () => {
    const csv = path.join(admin, "factory.csv");
    fs.writeFileSync(csv, 'deviceId,labels\ncli-factory-1,"site=plant-9,line=1"\ncli-factory-2,site=plant-9\n');
    const imported = await fleet(admin, ["devices", "preauthorize", "-f", csv, "-o", "table"]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout.trim()).toBe("2 pre-authorized devices added, 0 replaced");
    const listJson = path.join(admin, "factory.json");
    fs.writeFileSync(listJson, JSON.stringify([{ deviceId: "cli-factory-2", labels: { site: "plant-10" } }]));
    expect(await json(admin, ["devices", "preauthorize", "-f", listJson])).toEqual({ created: 0, updated: 1 });
    const listed = await service.call<{ items: Array<{ deviceId: string; labels: Record<string, string> }> }>("GET", "/api/v1/preauthorized-devices?search=cli-factory");
    expect(Object.fromEntries(listed.items.map((e) => [e.deviceId, e.labels]))).toEqual({ "cli-factory-1": { site: "plant-9", line: "1" }, "cli-factory-2": { site: "plant-10" } });
    fs.writeFileSync(csv, "deviceId,labels\ncli-factory-3,site\n");
    const bad = await fleet(admin, ["devices", "preauthorize", "-f", csv]);
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.stderr).toContain("labels");
    expect((await service.call<{ total: number }>("GET", "/api/v1/preauthorized-devices?search=cli-factory-3")).total).toBe(0);
  });

  it("prints a device's effective configuration with devices config: each value's layer and revision, what it overrode, the device's standing", async () => {
    const device = berlin.devices[0];
    const { name } = await service.call<{ name: string }>("GET", `/api/v1/devices/${device.deviceId}`);
    const site = await service.call<{ id: string }>("POST", "/api/v1/config-layers", { body: {
      name: "cli-berlin", kind: "selector", selector: { site: "berlin" }, order: 10,
      variables: { LOG_LEVEL: "info", MQTT_URL: "mqtt://berlin.example" }, secrets: { MQTT_PASSWORD: "cli-secret-value-1" },
    } });
    const own = await service.call<{ id: string }>("POST", "/api/v1/config-layers", { body: {
      name: "cli-own", kind: "device", deviceId: device.deviceId, variables: { LOG_LEVEL: "debug" },
      files: [{ path: "/etc/fleet/app.conf", content: "level={{ vars.LOG_LEVEL }}\n", mode: "0640" }],
    } });
    const shown = await fleet(admin, ["devices", "config", name, "-o", "table"]);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split("\n");
    const effective = await service.call<{ revision: string }>("GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`);
    expect(lines[0]).toBe(`device ${name}, configuration ${effective.revision.slice(0, 12)}: not reported by the device yet`);
    expect(lines[1]).toBe("layers, lowest precedence first: cli-berlin@1, cli-own@1");
    const row = (first: string) => lines.find((l) => l.startsWith(`${first} `))?.split(/\s{3,}/);
    expect(row("VARIABLE")).toEqual(["VARIABLE", "VALUE", "FROM", "OVERRODE"]);
    expect(row("LOG_LEVEL")).toEqual(["LOG_LEVEL", "debug", "cli-own@1", "cli-berlin@1"]);
    expect(row("MQTT_URL")).toEqual(["MQTT_URL", "mqtt://berlin.example", "cli-berlin@1", "-"]);
    expect(row("MQTT_PASSWORD")).toEqual(["MQTT_PASSWORD", "(secret)", "cli-berlin@1", "-"]);
    expect(row("/etc/fleet/app.conf")).toEqual(["/etc/fleet/app.conf", "0640", "-", "12", "cli-own@1", "-"]);
    expect(shown.stdout).not.toContain("cli-secret-value-1");
    // the device applies it with its next heartbeat (simulated devices report revisions applied)
    await berlin.heartbeat([device]);
    await berlin.heartbeat([device]);
    const after = await json(admin, ["devices", "config", device.deviceId!]);
    expect(after).toMatchObject({ deviceName: name, revision: effective.revision, inSync: true });
    expect((await fleet(admin, ["devices", "config", device.deviceId!, "-o", "table"])).stdout.split("\n")[0]).toMatch(/: in sync$/);
    const missing = await fleet(admin, ["devices", "config", "no-such-device"]);
    expect(missing.code).toBe(EXIT.notFound);
    for (const layer of [own, site]) await service.call("DELETE", `/api/v1/config-layers/${layer.id}`);
  });

  it("prints a device's logs and follows new lines with -f", async () => {
    const device = berlin.devices[1];
    const line = (message: string, level: "info" | "error" = "error") => ({ timestamp: new Date().toISOString(), level, source: "cli-app", message });
    expect((await device.sendLogs([line("first line"), line("routine", "info")])).status).toBeLessThan(300);
    const printed = await fleet(admin, ["logs", device.deviceId!, "--level", "error", "--since", "10m"]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(/ERROR \[cli-app\] first line\n$/);
    const follow = start(admin, ["logs", device.deviceId!, "-f", "--source", "cli-app"]);
    try {
      await eventually(async () => follow.out().includes("first line"), 15_000, "the tail");
      expect((await device.sendLogs([line("second line")])).status).toBeLessThan(300);
      await eventually(async () => follow.out().includes("second line"), 15_000, `the new line (${follow.err()})`);
    } finally {
      follow.child.kill();
    }
  });

  it("redraws fleet get devices --watch when a device joins", async () => {
    const watch = start(admin, ["get", "devices", "--watch", "-o", "name", "--limit", "200"]);
    try {
      await eventually(async () => watch.out().includes(berlin.devices[0].deviceId!), 15_000, `the first list (${watch.err()})`);
      const late = await service.enrollFleet({ prefix: "late", devices: 1, labels: { site: "late" } });
      await eventually(async () => watch.out().includes(late.devices[0].deviceId!), 15_000, "the joined device");
    } finally {
      watch.child.kill();
    }
  });

  it("deploy --wait exits 0 when the rollout completed and 8 when its failure threshold paused it", async () => {
    const good = start(admin, ["deploy", "line-monitor@1.0.0", "--selector", "site=berlin", "--wait", "--timeout", "40s", "-o", "json"]);
    await drive([berlin], good.exited);
    expect(await good.exited, good.err()).toBe(EXIT.ok);
    expect(JSON.parse(good.out()).deployment).toMatchObject({ rolloutState: "completed", version: "1.0.0", progress: expect.objectContaining({ running: 3, failed: 0 }) });
    const bad = start(admin, ["deploy", "line-monitor", "--selector", "site=hamburg", "--canary", "1", "--batches", "100%", "--failure-threshold", "50", "--wait", "--timeout", "40s"]);
    await drive([hamburg], bad.exited);
    expect(await bad.exited, bad.err()).toBe(EXIT.rolloutFailed);
    expect(bad.err()).toMatch(/error: the rollout is paused: .*failure threshold/);
    const list = await service.call("GET", "/api/v1/deployments?limit=200");
    const paused = list.items.find((d: { version: string; rolloutState: string }) => d.version === "1.1.0");
    expect(paused).toMatchObject({ rolloutState: "paused" });

    // the rollout moves, by name
    const resumed = await json(admin, ["rollout", "resume", paused.name]);
    expect(resumed.state).toBe("canary");
    expect((await json(admin, ["rollout", "pause", paused.id])).state).toBe("paused");
    expect((await json(admin, ["rollout", "status", paused.id])).state).toBe("paused");
    expect((await json(admin, ["rollout", "abort", paused.id])).state).toBe("aborted");
    const again = await fleet(admin, ["rollout", "pause", paused.id]);
    expect(again.code).toBe(EXIT.conflict);
    expect(again.stderr).toContain("Cannot pause the rollout: it is aborted");
  });

  it("deploy --wait and rollout watch say where a rollout is by one line: the same batch numbering, ending on the completed rollout", async () => {
    const run = start(admin, ["deploy", "line-monitor@1.1.0", "--selector", "site=berlin", "--canary", "1", "--batches", "100%", "--auto-advance", "--wait", "--timeout", "40s", "-o", "json"]);
    await drive([berlin], run.exited);
    expect(await run.exited, run.err()).toBe(EXIT.ok);
    const lines = run.err().split("\n").filter((l) => / - \d+ running, \d+ failed, \d+ in flight, \d+ waiting/.test(l));
    expect(lines.at(-1)).toMatch(/^completed, canary and 1 batch done - 3 running, 0 failed, 0 in flight, 0 waiting/);
    // "rolling out" alone between two batches (the canary done, batch 1 not dispatched yet: seen on a loaded machine)
    for (const line of lines) expect(line).toMatch(/^(rolling out(, (canary|batch 1 of 1) in flight)?|completed, canary and 1 batch done) - /);
    const { deployment } = JSON.parse(run.out());
    // the same deployment through rollout watch (no terminal: the view once; the rollout has ended, so it exits 0)
    const watch = await fleet(admin, ["rollout", "watch", deployment.id]);
    expect(watch.code, watch.stderr).toBe(EXIT.ok);
    expect(watch.stdout).toMatch(/^State: completed, canary and 1 batch done {3}/m);
    expect(watch.stdout).not.toContain("in flight");
  });

  it("switches between two organizations by context and by --org, and logout revokes the session", async () => {
    const orgB = await service.createOrganization("CLI Org B");
    const user = await service.createUser("admin");
    await service.addMember(user.id, orgB.id, "admin");
    const inB = await service.call<{ accessToken: string }>("POST", "/api/v1/auth/login", { key: null, body: { email: user.email, password: user.password, organizationId: orgB.id } });
    const bFleet = await service.enrollFleet({ prefix: "orgb", devices: 1, as: { key: null, token: inB.accessToken } });
    const dir = home("two-orgs");
    const env = { FLEET_PASSWORD: user.password };
    expect((await fleet(dir, ["login", service.url, "--email", user.email, "--name", "a"], env)).code).toBe(0);
    expect((await fleet(dir, ["login", service.url, "--email", user.email, "--name", "b", "--org", orgB.slug], env)).code).toBe(0);
    const inDefault = (await service.call("GET", "/api/v1/devices?limit=1")).total;
    const [current, inA] = await Promise.all([json(dir, ["devices", "list"]), json(dir, ["--context", "a", "devices", "list"])]);
    expect(current.items.map((d: { id: string }) => d.id)).toEqual([bFleet.devices[0].deviceId]);
    expect(inA.total).toBe(inDefault);
    expect((await fleet(dir, ["context", "use", "a"])).code).toBe(0);
    const [nowA, b] = await Promise.all([json(dir, ["devices", "list"]), json(dir, ["--context", "b", "devices", "list"])]);
    expect(nowA.total).toBe(inDefault);
    expect(b.total).toBe(1);
    // --org moves a context's session to another of the user's organizations
    expect((await json(dir, ["--org", orgB.slug, "devices", "list"])).total).toBe(1);
    expect((await json(dir, ["context", "current"])).organization).toBe(orgB.slug);
    // logout: the session's tokens stop working at the server
    const config = parseYaml(fs.readFileSync(path.join(dir, ".config", "fleet", "config.yaml"), "utf8"));
    const token = config.contexts.a.accessToken as string;
    expect((await service.api("GET", "/api/v1/tenant/context", { key: null, token })).status).toBe(200);
    const logout = await fleet(dir, ["logout"]);
    expect(logout.code, logout.stderr).toBe(0);
    expect((await service.api("GET", "/api/v1/tenant/context", { key: null, token })).status).toBe(401);
    expect(Object.keys(parseYaml(fs.readFileSync(path.join(dir, ".config", "fleet", "config.yaml"), "utf8")).contexts)).toEqual(["b"]);
    expect((await fleet(dir, ["devices", "list"])).code).toBe(EXIT.auth);
  });

  it("completes commands, flags and enum values in bash, and prints zsh and fish scripts", async () => {
    const scripts = await Promise.all(["bash", "zsh", "fish"].map((shell) => fleet(admin, ["completion", shell])));
    expect(scripts[0].stdout).toContain("complete -o default -F _fleet_complete fleet");
    expect(scripts.map((s) => s.code)).toEqual([0, 0, 0]);
    expect(scripts[1].stdout).toContain("compdef _fleet_complete fleet");
    expect(scripts[2].stdout).toContain("complete -c fleet");
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-bin-"));
    fs.symlinkSync(BIN, path.join(bin, "fleet"));
    const complete = (words: string[]) => {
      const script = `source /dev/stdin <<'EOF'\n${scripts[0].stdout}EOF\nCOMP_WORDS=(fleet ${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length}; _fleet_complete; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const res = spawnSync("bash", ["--norc", "--noprofile", "-c", script], { env: { ...envOf(admin), PATH: `${bin}:${process.env.PATH}` }, encoding: "utf8" });
      return res.stdout.trim().split("\n");
    };
    expect(complete(["rollo"])).toEqual(["rollout"]);
    expect(complete(["devices", "list", "--status", ""])).toEqual(["error", "offline", "online", "pending", "provisioned"]);
    expect(complete(["deployments", "rollout-p"])).toEqual(["rollout-pause", "rollout-promote"]);
  });

  it("serves the service's MCP tools on stdio as the signed-in session, and exits 3 for a refused key", async () => {
    const mcp = start(admin, ["mcp", "--read-only"], {}, null);
    try {
      const send = (message: object) => mcp.child.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
      const answer = (id: number) => eventually(async () => mcp.out().split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((m) => m.id === id), 20_000, `MCP answer ${id} (${mcp.err()})`);
      send({ id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "cli-test", version: "1.0.0" } } });
      expect((await answer(1)).result.serverInfo).toBeDefined();
      send({ method: "notifications/initialized" });
      send({ id: 2, method: "tools/list", params: {} });
      const tools = (await answer(2)).result.tools as Array<{ name: string; annotations?: { readOnlyHint?: boolean } }>;
      expect(tools.map((t) => t.name)).toContain("devices_list");
      expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
    } finally {
      mcp.child.kill();
    }
    const refused = await fleet(home("mcp"), ["mcp"], { FLEET_URL: service.url, FLEET_API_KEY: "fm_" + "y".repeat(40) });
    expect(refused.code).toBe(EXIT.auth);
  });

  it.skipIf(!peerAvailable("tmux"))("shows fleet rollout watch in a terminal, redrawn as the rollout moves", async () => {
    const created = await json(admin, ["deploy", "line-monitor@1.1.0", "--selector", "site=berlin", "--canary", "1", "--batches", "100%"]);
    const socket = `fleet-cli-${process.pid}`;
    const tmux = (...args: string[]) => spawnSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });
    const screen = () => tmux("capture-pane", "-p", "-t", "watch").stdout;
    const env = envOf(admin);
    expect(tmux("new-session", "-d", "-s", "watch", "-x", "150", "-y", "30", ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]), "bash --norc --noprofile").status).toBe(0);
    try {
      tmux("send-keys", "-t", "watch", `node ${BIN} rollout watch ${created.id}; echo "exit=$?"`, "Enter");
      await eventually(async () => /State: rolling out, canary in flight/.test(screen()) && /BATCH\s+KIND\s+STATE/.test(screen()), 20_000, "the first view");
      const first = screen();
      expect(first).toContain(`Deployment ${created.name}`);
      expect(first).toMatch(/success threshold 90%\s+failure threshold 20%/);
      expect(first).toMatch(/^0\s+canary\s+in_progress\s+1\s+1\s/m);
      // the canary's device installs: the view follows without a key pressed
      const done = eventually(async () => /State: awaiting approval, canary done/.test(screen()), 20_000, "awaiting approval");
      await drive([berlin], done);
      expect(screen()).toMatch(/^0\s+canary\s+succeeded\s+1\s+1\s+0\s+0\s+0\s+1\s+0/m);
      expect((await fleet(admin, ["rollout", "approve", created.id])).code).toBe(0);
      const completed = eventually(async () => /exit=0/.test(screen()), 30_000, "the watch to end with the rollout");
      await drive([berlin], completed);
      const last = screen();
      expect(last).toContain("State: completed, canary and 1 batch done");
      expect(last).not.toContain("in flight");
      expect(last).toMatch(/^1\s+batch\s+succeeded\s+2\s+2\s+0\s+0\s+0\s+2\s+0/m);
    } finally {
      tmux("kill-server");
    }
  });
  if (!peerAvailable("tmux")) it.skip(missingPeerLine("tmux"), () => {});
});
