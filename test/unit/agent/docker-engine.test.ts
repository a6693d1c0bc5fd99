// The Docker engine of the agent (agent/src/runtime/docker.ts) against a fake `docker` and
// `docker-compose`: small programs on a PATH of their own that record every command line (and its
// working directory) and answer what Docker prints, from rules the test sets. What is checked:
// which compose program is detected, the command lines of every operation (they differ from
// Podman's), and the parsing of `docker ps --format '{{json .}}'` (one object a line, labels as one
// "k=v,k=v" text, the exit code only in the status). The same engine runs on a real Docker daemon
// in test/agent/agent-docker-e2e.test.ts where one can run.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DockerComposeEngine } from "../../../agent/src/runtime/docker.js";
import { detectEngine } from "../../../agent/src/runtime/engine.js";

interface Rule {
  /** the program's name (docker, docker-compose) and its arguments joined by spaces must match this */
  match: string;
  stdout?: string;
  stderr?: string;
  code?: number;
}

let bin: string;
const FAKE = (dir: string) => `#!${process.execPath}
const fs = require("node:fs");
const path = require("node:path");
const program = path.basename(process.argv[1]);
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(path.join(dir, "calls.log"))}, JSON.stringify({ program, args, cwd: process.cwd() }) + "\\n");
const rules = JSON.parse(fs.readFileSync(${JSON.stringify(path.join(dir, "rules.json"))}, "utf8"));
const line = [program, ...args].join(" ");
const rule = rules.find((r) => new RegExp(r.match).test(line)) || {};
process.stdout.write(rule.stdout || "");
process.stderr.write(rule.stderr || "");
process.exit(rule.code || 0);
`;

function fakeDocker(rules: Rule[], programs: string[] = ["docker", "docker-compose"]) {
  fs.writeFileSync(path.join(bin, "rules.json"), JSON.stringify(rules));
  for (const program of programs) fs.writeFileSync(path.join(bin, program), FAKE(bin), { mode: 0o755 });
}

/** The command lines the fake programs ran, as "program arg arg ...". */
function calls(): Array<{ line: string; cwd: string }> {
  const file = path.join(bin, "calls.log");
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => {
    const call = JSON.parse(l) as { program: string; args: string[]; cwd: string };
    return { line: [call.program, ...call.args].join(" "), cwd: call.cwd };
  });
}
const lines = () => calls().map((c) => c.line);

/** Only the fake programs (and /bin for nothing else of ours) on the engine commands' PATH: no real podman or docker is found. */
const engineOptions = () => ({ env: { PATH: bin } });

beforeEach(() => {
  bin = fs.mkdtempSync(path.join(os.tmpdir(), "fake-docker-"));
});
afterEach(() => fs.rmSync(bin, { recursive: true, force: true }));

const PLUGIN_VERSION: Rule = { match: "^docker compose version$", stdout: "Docker Compose version v2.29.1\n" };
const DOCKER_VERSION: Rule = { match: "^docker --version$", stdout: "Docker version 27.3.1, build ce12230\n" };
const label = (project: string, service: string, dir: string) =>
  `com.docker.compose.config-hash=ab12,com.docker.compose.container-number=1,com.docker.compose.project=${project},com.docker.compose.project.working_dir=${dir},com.docker.compose.service=${service},com.docker.compose.version=2.29.1`;
const psLine = (o: { id: string; name: string; state: string; status: string; labels: string }) =>
  JSON.stringify({ Command: '"/bin/sh -c …"', ID: o.id, Image: "x", Labels: o.labels, Names: o.name, State: o.state, Status: o.status, Ports: "" });

describe("choosing Docker and its compose program", () => {
  it("takes the compose plugin (`docker compose`) when docker has it, and says both versions", async () => {
    fakeDocker([DOCKER_VERSION, PLUGIN_VERSION]);
    const engine = await detectEngine("docker", engineOptions());
    expect(engine.kind).toBe("docker");
    expect(await engine.version()).toBe("Docker version 27.3.1, build ce12230; Docker Compose version v2.29.1");
  });

  it("falls back to the standalone docker-compose when the plugin is missing", async () => {
    fakeDocker([
      DOCKER_VERSION,
      { match: "^docker compose version$", stderr: "docker: 'compose' is not a docker command.\nSee 'docker --help'\n", code: 1 },
      { match: "^docker-compose version$", stdout: "docker-compose version 1.29.2, build unknown\ndocker-py version: 5.0.3\n" },
    ]);
    const engine = await detectEngine("docker", engineOptions());
    expect(await engine.version()).toBe("Docker version 27.3.1, build ce12230; docker-compose version 1.29.2, build unknown");
    const dir = path.join(bin, "p");
    fs.mkdirSync(dir);
    await engine.up({ name: "fleet-a-web", dir });
    expect(calls().at(-1)).toEqual({ line: `docker-compose -p fleet-a-web -f ${dir}/compose.yaml up -d`, cwd: dir });
  });

  it("without a preference: Podman first, then Docker; with neither compose program, says what is missing", async () => {
    fakeDocker([DOCKER_VERSION, PLUGIN_VERSION], ["docker"]); // no podman on this PATH
    expect((await detectEngine(undefined, engineOptions())).kind).toBe("docker");
    fakeDocker([DOCKER_VERSION, { match: "^docker compose version$", stderr: "docker: 'compose' is not a docker command.\n", code: 1 }], ["docker"]);
    await expect(detectEngine(undefined, engineOptions())).rejects.toThrow(
      /^no usable container engine \(podman: podman is not installed \(not found on PATH\); docker: docker compose: docker: 'compose' is not a docker command\.\)$/,
    );
  });
});

describe("Docker's command lines", () => {
  let engine: DockerComposeEngine;
  let dir: string;
  beforeEach(() => {
    engine = new DockerComposeEngine(engineOptions());
    dir = path.join(bin, "releases", "d1", "web");
    fs.mkdirSync(dir, { recursive: true });
  });

  it("pull and up go through the compose program with the project's name and file, in its directory", async () => {
    fakeDocker([]);
    await engine.pull({ name: "fleet-a-web", dir });
    await engine.up({ name: "fleet-a-web", dir });
    expect(calls()).toEqual([
      { line: `docker compose -p fleet-a-web -f ${dir}/compose.yaml pull`, cwd: dir },
      { line: `docker compose -p fleet-a-web -f ${dir}/compose.yaml up -d`, cwd: dir },
    ]);
  });

  it("a pull with the service's grant reads the credential from the grant's directory (--config), one without does not", async () => {
    fakeDocker([]);
    await engine.pullImage("fleet.test:8443/0b0e/team/web@sha256:" + "ab".repeat(32), { authDir: "/var/lib/fleet-agent/pull-auth" });
    await engine.pullImage("public.test/cache:7");
    expect(lines()).toEqual([
      `docker --config /var/lib/fleet-agent/pull-auth pull --quiet fleet.test:8443/0b0e/team/web@sha256:${"ab".repeat(32)}`,
      "docker pull --quiet public.test/cache:7",
    ]);
  });

  it("a refused file or a failed start rejects with Docker's own words", async () => {
    fakeDocker([{
      match: " up -d$",
      stderr: " Container fleet-a-web-web-1  Creating\nError response from daemon: driver failed programming external connectivity on endpoint fleet-a-web-web-1: Bind for 127.0.0.1:8080 failed: port is already allocated\n",
      code: 1,
    }]);
    await expect(engine.up({ name: "fleet-a-web", dir })).rejects.toThrow(/^Error response from daemon: driver failed .*port is already allocated$/);
  });

  it("reads the project's containers out of docker ps: state, health, exit code, service and directory from the labels", async () => {
    fakeDocker([{
      match: "^docker ps -a --filter label=com.docker.compose.project=fleet-a-web --format \\{\\{json \\.\\}\\}$",
      stdout: [
        psLine({ id: "c1", name: "fleet-a-web-web-1", state: "running", status: "Up 2 minutes (healthy)", labels: label("fleet-a-web", "web", dir) }),
        psLine({ id: "c2", name: "fleet-a-web-worker-1", state: "exited", status: "Exited (3) 5 seconds ago", labels: label("fleet-a-web", "worker", dir) }),
        psLine({ id: "c3", name: "fleet-a-web-db-1", state: "running", status: "Up 3 seconds (health: starting)", labels: label("fleet-a-web", "db", dir) }),
      ].join("\n") + "\n",
    }]);
    expect(await engine.containers("fleet-a-web")).toEqual([
      { id: "c1", name: "fleet-a-web-web-1", service: "web", workingDir: dir, state: "running", health: "healthy", exitCode: null },
      { id: "c2", name: "fleet-a-web-worker-1", service: "worker", workingDir: dir, state: "exited", health: null, exitCode: 3 },
      { id: "c3", name: "fleet-a-web-db-1", service: "db", workingDir: dir, state: "running", health: "starting", exitCode: null },
    ]);
  });

  it("lists several projects' containers in one command, and the projects by container and network", async () => {
    fakeDocker([
      {
        match: "^docker ps -a --filter label=com.docker.compose.project --format",
        stdout: [
          psLine({ id: "a1", name: "fleet-a-web-web-1", state: "running", status: "Up 1 hour", labels: label("fleet-a-web", "web", dir) }),
          psLine({ id: "b1", name: "other_app_1", state: "running", status: "Up 1 hour", labels: label("other", "app", "/srv/other") }),
          psLine({ id: "c1", name: "fleet-c-web-web-1", state: "exited", status: "Exited (0) 1 hour ago", labels: label("fleet-c-web", "web", dir) }),
        ].join("\n"),
      },
      { match: "^docker network ls --filter label=com.docker.compose.project --format", stdout: JSON.stringify({ ID: "n1", Name: "fleet-b-web_default", Labels: "com.docker.compose.network=default,com.docker.compose.project=fleet-b-web" }) + "\n" },
    ]);
    expect((await engine.containersOf(["fleet-a-web", "fleet-c-web"])).map((c) => [c.name, c.state, c.exitCode])).toEqual([
      ["fleet-a-web-web-1", "running", null],
      ["fleet-c-web-web-1", "exited", 0],
    ]);
    expect(lines()).toHaveLength(1);
    expect(await engine.projects("fleet-")).toEqual(["fleet-a-web", "fleet-b-web", "fleet-c-web"]);
    expect(await engine.containersOf([])).toEqual([]);
  });

  it("down finds the project by label (no compose file needed): stops with the timeout, removes containers and networks, volumes only when asked", async () => {
    const filter = "label=com.docker.compose.project=fleet-a-web";
    fakeDocker([
      { match: `^docker ps -a -q --filter ${filter}$`, stdout: "c1\nc2\n" },
      { match: `^docker network ls -q --filter ${filter}$`, stdout: "n1\n" },
      { match: `^docker volume ls -q --filter ${filter}$`, stdout: "v1\n" },
    ]);
    await engine.down({ name: "fleet-a-web" }, { stopTimeoutSeconds: 3 });
    expect(lines()).toEqual([
      `docker ps -a -q --filter ${filter}`,
      "docker stop --time 3 c1 c2",
      "docker rm --force c1 c2",
      `docker network ls -q --filter ${filter}`,
      "docker network rm n1",
    ]);
    fs.rmSync(path.join(bin, "calls.log"));
    await engine.down({ name: "fleet-a-web" }, { volumes: true });
    expect(lines()).toEqual([
      `docker ps -a -q --filter ${filter}`,
      "docker stop --time 10 c1 c2",
      "docker rm --force --volumes c1 c2",
      `docker network ls -q --filter ${filter}`,
      "docker network rm n1",
      `docker volume ls -q --filter ${filter}`,
      "docker volume rm --force v1",
    ]);
  });

  it("a project with nothing left runs no removal", async () => {
    fakeDocker([]);
    await engine.down({ name: "fleet-gone-web" });
    expect(lines()).toEqual([
      "docker ps -a -q --filter label=com.docker.compose.project=fleet-gone-web",
      "docker network ls -q --filter label=com.docker.compose.project=fleet-gone-web",
    ]);
  });

  it("logs: both streams with their times, oldest first; the log file only for json-file and local", async () => {
    fakeDocker([
      { match: "^docker logs --timestamps --since 2026-11-27T13:00:00.000Z --tail 2 web-1$", stdout: "2026-11-27T13:43:05.1Z serving\n2026-11-27T13:43:07Z second\n", stderr: "2026-11-27T13:43:06.5Z warned\n" },
      { match: "^docker inspect --format .* web-1$", stdout: "json-file /var/lib/docker/containers/abc/abc-json.log\n" },
      { match: "^docker inspect --format .* web-2$", stdout: "journald \n" },
    ]);
    expect(await engine.logs("web-1", new Date("2026-11-27T13:00:00Z"), { tail: 2 })).toEqual([
      { timestamp: "2026-11-27T13:43:06.500000000Z", stream: "stderr", message: "warned" },
      { timestamp: "2026-11-27T13:43:07.000000000Z", stream: "stdout", message: "second" },
    ]);
    expect(await engine.logFile("web-1")).toBe("/var/lib/docker/containers/abc/abc-json.log");
    expect(await engine.logFile("web-2")).toBeNull();
    // dockerd runs health checks itself: no command
    const before = lines().length;
    await engine.runHealthCheck();
    expect(lines()).toHaveLength(before);
  });
});
