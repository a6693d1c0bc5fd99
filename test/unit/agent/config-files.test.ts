// The device side of configuration (issue 48; agent/src/config/): a revision's files written
// all or none under the allowed roots, with their mode and owner, files of the earlier revision
// removed; a path outside the roots refused with nothing written; and kill -9 of a process in
// the middle of a revision, at every step of it, recovered into the old set or the new one,
// never a mix (a real child process, killed with SIGKILL while it stands at that step).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { FileSet, type DesiredFile } from "../../../agent/src/config/file-set.js";
import { checkPath, configRootsFromEnv, PathRefused } from "../../../agent/src/config/roots.js";
import type { ConfigFileEntry } from "../../../agent/src/config/types.js";

const BASE = "/dev/shm/fleet-tests";
const CHILD = path.join(import.meta.dirname, "support", "config-crash-child.ts");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  fs.mkdirSync(BASE, { recursive: true });
  const dir = fs.mkdtempSync(path.join(BASE, "agent-config-"));
  dirs.push(dir);
  return dir;
}

const sha = (text: string | Buffer) => createHash("sha256").update(text).digest("hex");

function entry(file: string, content: string | Buffer, extra: Partial<ConfigFileEntry> = {}): ConfigFileEntry {
  const data = Buffer.from(content);
  return { path: file, contentBase64: data.toString("base64"), sha256: sha(data), mode: "0644", layer: "site", ...extra };
}

/** A device with two roots and a state directory. */
function device() {
  const dir = tempDir();
  const roots = [`${dir}/etc/fleet/`, `${dir}/opt/conf/`];
  const stateDir = path.join(dir, "state");
  fs.mkdirSync(stateDir, { mode: 0o700 });
  const files = new FileSet({ stateDir, roots });
  /** what lies under the roots: path (relative to dir) -> content */
  const tree = () => {
    const out: Record<string, string> = {};
    const walk = (d: string) => {
      for (const name of fs.existsSync(d) ? fs.readdirSync(d) : []) {
        const p = path.join(d, name);
        if (fs.statSync(p).isDirectory()) walk(p);
        else out[p.slice(dir.length)] = fs.readFileSync(p, "utf8");
      }
    };
    for (const root of roots) walk(root);
    return out;
  };
  return { dir, roots, stateDir, files, tree };
}

describe("a revision's file set", () => {
  it("writes every file with its mode and owner, and removes the files the next revision no longer has", () => {
    const { dir, files, tree } = device();
    const first = files.check([
      entry(`${dir}/etc/fleet/mqtt.conf`, "url=mqtts://a\n", { mode: "0640", owner: "root:root" }),
      entry(`${dir}/etc/fleet/certs/site.pem`, "PEM\n", { mode: "0600", owner: "0:0" }),
      entry(`${dir}/opt/conf/flags.json`, "{}\n"),
    ]);
    expect(files.apply("r1", first).changed).toHaveLength(3);
    expect(tree()).toEqual({ "/etc/fleet/mqtt.conf": "url=mqtts://a\n", "/etc/fleet/certs/site.pem": "PEM\n", "/opt/conf/flags.json": "{}\n" });
    const stat = fs.statSync(`${dir}/etc/fleet/mqtt.conf`);
    expect(stat.mode & 0o7777).toBe(0o640);
    expect([stat.uid, stat.gid]).toEqual([0, 0]);
    expect(fs.statSync(`${dir}/etc/fleet/certs/site.pem`).mode & 0o7777).toBe(0o600);
    expect(files.applied()).toMatchObject({ revision: "r1", files: [{ path: `${dir}/etc/fleet/mqtt.conf`, sha256: sha("url=mqtts://a\n"), mode: 0o640, layer: "site" }, {}, {}] });

    // r2: one file changed, one kept as it is, one gone
    const second = files.check([entry(`${dir}/etc/fleet/mqtt.conf`, "url=mqtts://b\n", { mode: "0640" }), entry(`${dir}/etc/fleet/certs/site.pem`, "PEM\n", { mode: "0600", owner: "0:0" })]);
    expect(files.apply("r2", second).changed).toEqual([`${dir}/etc/fleet/mqtt.conf`, `${dir}/opt/conf/flags.json`]);
    expect(tree()).toEqual({ "/etc/fleet/mqtt.conf": "url=mqtts://b\n", "/etc/fleet/certs/site.pem": "PEM\n" });
    // no temporary file, journal or staging left behind
    expect(fs.readdirSync(`${dir}/etc/fleet`).sort()).toEqual(["certs", "mqtt.conf"]);
    expect(fs.readdirSync(files.dir).sort()).toEqual(["applied.json"]);

    // an empty revision: the device owns no configuration files any more
    expect(files.apply("r3", []).changed).toHaveLength(2);
    expect(tree()).toEqual({});
    expect(files.applied()).toEqual({ revision: "r3", files: [] });
  });

  it("refuses a path outside the roots, a traversal, a link out of a root or a bad digest, naming the path, with nothing written", () => {
    const { dir, roots, files, tree } = device();
    files.apply("r1", files.check([entry(`${dir}/etc/fleet/a.conf`, "a\n")]));
    fs.mkdirSync(`${dir}/elsewhere`);
    fs.symlinkSync(`${dir}/elsewhere`, `${dir}/etc/fleet/out`);
    const good = entry(`${dir}/etc/fleet/b.conf`, "b\n");
    for (const [bad, words] of [
      [entry(`${dir}/etc/passwd`, "x"), "is outside the allowed roots"],
      [entry(`${dir}/etc/fleet/../passwd`, "x"), "no traversal"],
      [entry(`${dir}/etc/fleet//x.conf`, "x"), "no traversal"],
      [entry("etc/fleet/x.conf", "x"), "is not an absolute path"],
      [entry(`${dir}/etc/fleet/out/x.conf`, "x"), "is a symbolic link"],
      [{ ...entry(`${dir}/etc/fleet/c.conf`, "c"), sha256: sha("other") }, "does not match its sha256"],
      [entry(`${dir}/etc/fleet/c.conf`, "c", { mode: "rwx" }), "is not an octal mode"],
      [entry(`${dir}/etc/fleet/c.conf`, "c", { owner: "nobody-here:root" }), "no user nobody-here"],
    ] as const) {
      expect(() => files.apply("r2", files.check([good, bad])), bad.path).toThrow(words);
      expect(() => files.check([good, bad])).toThrow(bad.path);
    }
    expect(tree()).toEqual({ "/etc/fleet/a.conf": "a\n" });
    expect(fs.readdirSync(`${dir}/elsewhere`)).toEqual([]);
    expect(files.applied()!.revision).toBe("r1");
    expect(() => checkPath("/etc/fleet/../passwd", ["/etc/fleet/"])).toThrow(PathRefused);
    // the defaults: /etc/fleet/ and the state directory's files/ (not the agent's own files beside it)
    expect(configRootsFromEnv("/var/lib/fleet-agent", {})).toEqual(["/etc/fleet/", "/var/lib/fleet-agent/files/"]);
    expect(configRootsFromEnv("/x", { FLEET_AGENT_CONFIG_ROOTS: "/srv/conf:/etc/app/" })).toEqual(["/srv/conf/", "/etc/app/"]);
    expect(() => checkPath("/var/lib/fleet-agent/device.key", configRootsFromEnv("/var/lib/fleet-agent", {}))).toThrow("outside the allowed roots");
    expect(roots).toHaveLength(2);
  });
});

/** The old set, the new one, and a device holding the old one. */
function crashFixture() {
  const d = device();
  const { dir, files } = d;
  const big = (c: string) => c.repeat(300_000); // big enough that a half write is a real half
  files.apply("old", files.check([
    entry(`${dir}/etc/fleet/a.conf`, big("a")),
    entry(`${dir}/etc/fleet/sub/b.conf`, "old b\n"),
    entry(`${dir}/opt/conf/c.conf`, "old c\n"),
  ]));
  const oldTree = d.tree();
  const next: Array<Omit<DesiredFile, "content"> & { content: string }> = [
    { path: `${dir}/etc/fleet/a.conf`, content: big("A"), sha256: sha(big("A")), mode: 0o600, uid: 0, gid: 0 },
    { path: `${dir}/etc/fleet/sub/b.conf`, content: "new b\n", sha256: sha("new b\n"), mode: 0o644, uid: 0, gid: 0 },
    { path: `${dir}/etc/fleet/new/d.conf`, content: "new d\n", sha256: sha("new d\n"), mode: 0o644, uid: 0, gid: 0 },
  ];
  const newTree = { "/etc/fleet/a.conf": big("A"), "/etc/fleet/sub/b.conf": "new b\n", "/etc/fleet/new/d.conf": "new d\n" };
  return { ...d, oldTree, next, newTree };
}

/** Runs the child until it stands at step `crashAt`, then kills it with SIGKILL; answers what it printed. */
async function killAt(spec: { stateDir: string; [key: string]: unknown }): Promise<string> {
  const specFile = path.join(path.dirname(spec.stateDir), "spec.json");
  fs.writeFileSync(specFile, JSON.stringify(spec));
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, specFile], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("waiting to be killed") || out.includes("done") || out.includes("failed:")) resolve();
    });
    child.once("exit", () => resolve());
  });
  if (out.includes("waiting to be killed")) child.kill("SIGKILL");
  const signal = await exited;
  if (out.includes("waiting to be killed")) expect(signal).toBe("SIGKILL");
  return out;
}

describe("kill -9 in the middle of a revision", () => {
  it("at every step: recovery leaves the old set or the new one, never a mix", { timeout: 300_000 }, async () => {
    // the steps of this transaction, counted by a run in this process on a copy
    const probe = crashFixture();
    const steps: string[] = [];
    new FileSet({ stateDir: probe.stateDir, roots: probe.roots, onStep: (s) => steps.push(s) }).apply("new", probe.next.map((f) => ({ ...f, content: Buffer.from(f.content) })));
    expect(probe.tree()).toEqual(probe.newTree);
    expect(steps.map((s) => s.replace(probe.dir, ""))).toEqual([
      "staged", "journal",
      "writing /etc/fleet/a.conf", "placed /etc/fleet/a.conf",
      "writing /etc/fleet/sub/b.conf", "placed /etc/fleet/sub/b.conf",
      "writing /etc/fleet/new/d.conf", "placed /etc/fleet/new/d.conf",
      "removed /opt/conf/c.conf", "applied",
    ]);

    const outcomes: string[] = [];
    for (let crashAt = 1; crashAt <= steps.length; crashAt++) {
      const f = crashFixture();
      const out = await killAt({ stateDir: f.stateDir, roots: f.roots, revision: "new", files: f.next, crashAt });
      expect(out, `crash at ${crashAt}`).toContain(`${crashAt} ${steps[crashAt - 1].replace(probe.dir, f.dir)}`);
      const recovered = new FileSet({ stateDir: f.stateDir, roots: f.roots }).recover();
      const tree = f.tree();
      const old = isDeepStrictEqual(tree, f.oldTree);
      const fresh = isDeepStrictEqual(tree, f.newTree);
      expect(old || fresh, `crash at step ${crashAt} (${steps[crashAt - 1]}) left a mix: ${Object.keys(tree).join(", ")}`).toBe(true);
      expect(new FileSet({ stateDir: f.stateDir, roots: f.roots }).applied()!.revision).toBe(old ? "old" : "new");
      if (fresh) expect(fs.statSync(`${f.dir}/etc/fleet/a.conf`).mode & 0o7777).toBe(0o600);
      // nothing of the transaction left: no temporary file beside a target, no journal, no staging
      expect(fs.readdirSync(`${f.dir}/etc/fleet`).filter((n) => n.startsWith("."))).toEqual([]);
      expect(fs.readdirSync(path.join(f.stateDir, "config"))).toEqual(["applied.json"]);
      outcomes.push(`${crashAt}:${old ? "old" : "new"}:${recovered}`);
    }
    // staged but no journal yet: the old set (staging dropped); once the journal is written: completed
    expect(outcomes).toEqual(steps.map((_, i) => `${i + 1}:${i < 1 ? "old:none" : "new:completed"}`));
  });

  it("a step the machine refuses after the commit point rolls back to the old set, and a kill -9 during that rollback too", { timeout: 120_000 }, async () => {
    const f = crashFixture();
    // the write of b.conf is refused (step 5): a.conf was already replaced and is put back
    const out = await killAt({ stateDir: f.stateDir, roots: f.roots, revision: "new", files: f.next, crashAt: 0, failAt: 5 });
    expect(out).toContain("failed: refused at writing");
    expect(f.tree()).toEqual(f.oldTree);
    expect(f.files.applied()!.revision).toBe("old");

    const g = crashFixture();
    // refused at step 5, then killed in the middle of the rollback's second restore
    const killed = await killAt({ stateDir: g.stateDir, roots: g.roots, revision: "new", files: g.next, failAt: 5, crashAt: 8 });
    expect(killed).toContain("waiting to be killed");
    expect(new FileSet({ stateDir: g.stateDir, roots: g.roots }).recover()).toBe("rolled back");
    expect(g.tree()).toEqual(g.oldTree);
    expect(g.files.applied()!.revision).toBe("old");
  });
});
