// The fleet agent's container runtime on real Podman (podman-compose, runc), loopback only: a
// busybox image made once for this file and pulled from a local registry (test/support/podman.ts).
// Every project name starts with this file's random prefix; afterAll takes down whatever is left.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { renderComposeFile } from "../../agent/src/runtime/compose-file.js";
import { detectEngine, waitUntilRunning, type ComposeEngine, type ComposeProject } from "../../agent/src/runtime/engine.js";
import { freePort } from "../support/oci-registry.js";
import { peersAvailable } from "../support/peers.js";
import { startPodmanHarness, type PodmanHarness } from "../support/podman.js";

const prefix = `rt${randomBytes(3).toString("hex")}-`;

describe.skipIf(!peersAvailable("podman", "docker-registry"))("the agent's container runtime on Podman", () => {
  let harness: PodmanHarness;
  let engine: ComposeEngine;

  beforeAll(async () => {
    harness = await startPodmanHarness();
    engine = await detectEngine("podman", { env: harness.env });
  });

  afterAll(async () => {
    vi.unstubAllEnvs();
    if (engine) for (const name of await engine.projects(prefix)) await engine.down({ name }, { volumes: true });
    await harness?.close();
  });

  /** A project directory holding compose.yaml (and .env when given). */
  async function project(name: string, compose: string, env = ""): Promise<ComposeProject> {
    const dir = path.join(harness.dir, name);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "compose.yaml"), compose);
    if (env) await writeFile(path.join(dir, ".env"), env);
    return { name: prefix + name, dir };
  }

  const podmanContainers = async (name: string) =>
    (await harness.podman(["ps", "-a", "-q", "--filter", `label=com.docker.compose.project=${name}`])).split("\n").filter(Boolean);

  it("finds Podman with podman-compose and says their versions", async () => {
    expect(engine.kind).toBe("podman");
    expect(await engine.version()).toMatch(/^podman version \d+\.\d+\.\d+; podman-compose(r)? version \d/);
  });

  let web: ComposeProject;

  it("runs a rendered compose project: pulls from the registry, the container runs healthy, the page shows the parameter, the log has its lines", async () => {
    const port = await freePort();
    // The page shows GREETING (set in `environment`); the port comes from `.env` by interpolation.
    // The shell stops on SIGTERM, as a well-behaved service does (PID 1 ignores it otherwise).
    const template = [
      "services:",
      "  web:",
      `    image: ${harness.image}`,
      "    command:",
      "      - /bin/sh",
      "      - -c",
      "      - >-",
      "        echo \"$$GREETING\" > /tmp/index.html; echo serving; echo on stderr >&2; echo \"agent secret: $$LEAK\";",
      "        trap 'exit 0' TERM; httpd -f -p 8080 -h /tmp & wait",
      '    ports: ["127.0.0.1:${WEB_PORT}:8080"]',
      // The agent's own variables are not the compose file's to read.
      '    environment: { LEAK: "${FLEET_RUNTIME_TEST_SECRET:-not given}" }',
      "    healthcheck:",
      '      test: "wget -q -O /dev/null http://127.0.0.1:8080/"',
      "      interval: 30s",
      "",
    ].join("\n");
    vi.stubEnv("FLEET_RUNTIME_TEST_SECRET", "s3cr3t");
    const rendered = renderComposeFile(template, { GREETING: "hello from $HOME's version 1", WEB_PORT: port });
    web = await project("web", rendered.compose, rendered.env);
    const since = new Date(Date.now() - 1000);

    await engine.pull(web);
    expect(await harness.podman(["image", "exists", harness.image]).then(() => true, () => false)).toBe(true);
    await engine.up(web);
    const running = await waitUntilRunning(engine, web.name, 60_000, { pollMs: 250 });
    expect(running).toEqual([
      { id: expect.any(String), name: `${web.name}_web_1`, service: "web", state: "running", health: "healthy", exitCode: null, workingDir: web.dir },
    ]);

    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(page.status).toBe(200);
    expect((await page.text()).trim()).toBe("hello from $HOME's version 1");

    expect(await engine.containers(web.name)).toEqual(running);
    // One look for several projects (the idle loop's), and the log file whose size and time
    // tell without an engine command whether the container wrote (podman's k8s-file here).
    expect(await engine.containersOf([web.name, `${prefix}none`])).toEqual(running);
    const logFile = await engine.logFile(`${web.name}_web_1`);
    expect(logFile).toMatch(/\/ctr\.log$/);
    expect(statSync(logFile!).size).toBeGreaterThan(0);
    const lines = await engine.logs(`${web.name}_web_1`, since);
    // Each stream in its order; across the two, the engine's timestamps order the lines (conmon
    // reads the two pipes apart, so lines microseconds apart may come in either order).
    expect(lines.filter((l) => l.stream === "stdout").map((l) => l.message)).toEqual(["serving", "agent secret: not given"]);
    expect(lines.filter((l) => l.stream === "stderr").map((l) => l.message)).toEqual(["on stderr"]);
    expect(lines.map((l) => l.timestamp)).toEqual(lines.map((l) => l.timestamp).sort());
    expect(lines.every((line) => !Number.isNaN(Date.parse(line.timestamp)) && Date.parse(line.timestamp) >= since.getTime())).toBe(true);
    expect(await engine.logs(`${web.name}_web_1`, new Date(Date.now() + 60_000))).toEqual([]);
  });

  it("reports a container that exits with its exit code and the last line of its log", async () => {
    // One stream: the order of lines across stdout and stderr is only as good as their timestamps.
    const crashing = await project(
      "crash",
      `services:\n  app:\n    image: ${harness.image}\n    command: ["/bin/sh", "-c", "echo starting >&2; echo config file /etc/app.conf missing >&2; exit 3"]\n`,
    );
    await engine.pull(crashing);
    await engine.up(crashing);
    await expect(waitUntilRunning(engine, crashing.name, 60_000, { pollMs: 250 })).rejects.toThrow(
      `container ${crashing.name}_app_1 (service app) exited with code 3: starting\nconfig file /etc/app.conf missing`,
    );
    expect(await engine.containers(crashing.name)).toMatchObject([{ service: "app", state: "exited", exitCode: 3 }]);
  });

  it("reports a container whose health check fails as unhealthy", async () => {
    const sick = await project(
      "sick",
      `services:\n  app:\n    image: ${harness.image}\n    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"]\n    healthcheck:\n      test: "echo database unreachable; false"\n      interval: 30s\n      retries: 1\n`,
    );
    await engine.up(sick);
    await expect(waitUntilRunning(engine, sick.name, 60_000, { pollMs: 250 })).rejects.toThrow(`container ${sick.name}_app_1 (service app) is unhealthy`);
  });

  it("gives up after the timeout, naming the container whose health check has not passed yet", async () => {
    // retries: 1000: the failing check keeps the container "starting", never "unhealthy".
    const slow = await project(
      "slow",
      `services:\n  app:\n    image: ${harness.image}\n    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"]\n    healthcheck:\n      test: "cat /tmp/ready"\n      interval: 30s\n      retries: 1000\n`,
    );
    await engine.up(slow);
    const started = Date.now();
    await expect(waitUntilRunning(engine, slow.name, 2000, { pollMs: 250 })).rejects.toThrow(
      `not running after 2s: ${slow.name}_app_1 is running (health check not passed yet)`,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("gives the engine's own message, without a stack, for a compose file it refuses", async () => {
    const refused = await project("refused", `services:\n  app:\n    image: ${harness.image}\n    ports: ["127.0.0.1:99999:8080"]\n`);
    const error = await engine.up(refused).then(() => null, (e: Error) => e);
    expect(error?.message).toBe(
      "Error: parsing host port: port numbers must be between 1 and 65535 (inclusive), got 99999 (service app has no container)",
    );
    const broken = await project("broken", `services:\n  app:\n    image: ${harness.image}\n    networks: [nowhere]\n`);
    const parseError = await engine.pull(broken).then(() => null, (e: Error) => e);
    // podman-compose's Python traceback comes down to its last line.
    expect(parseError?.message).toBe("RuntimeError: missing networks: default");
    expect(parseError?.stack).not.toMatch(/Traceback|\n\s+at /);
  });

  it("gives the engine's message for an image that cannot be pulled, at pull and at up", async () => {
    const missing = await project("missing", `services:\n  app:\n    image: ${harness.missingImage}\n`);
    const pullError = await engine.pull(missing).then(() => null, (e: Error) => e);
    expect(pullError?.message).toMatch(new RegExp(`^Error: initializing source docker://${harness.missingImage.replace(/[.]/g, "\\.")}: .*manifest unknown`));
    await expect(engine.up(missing)).rejects.toThrow(/manifest unknown.*\(service app has no container\)$/s);
  });

  it("down keeps a project's named volume and what it holds; asked to (removeVolumes: true in the manifest), it removes it too", async () => {
    const compose = [
      "services:",
      "  keeper:",
      `    image: ${harness.image}`,
      "    command: [\"/bin/sh\", \"-c\", \"test -f /data/mark || echo kept > /data/mark; trap 'exit 0' TERM; sleep 600 & wait\"]",
      "    volumes: [\"data:/data\"]",
      "volumes:",
      "  data: {}",
      "",
    ].join("\n");
    const keeper = await project("volumes", compose);
    const volumes = async () =>
      (await harness.podman(["volume", "ls", "-q", "--filter", `label=com.docker.compose.project=${keeper.name}`])).split("\n").filter(Boolean);
    await engine.up(keeper);
    await waitUntilRunning(engine, keeper.name, 60_000, { pollMs: 250 });
    expect(await volumes()).toEqual([`${keeper.name}_data`]);
    const mountpoint = (await harness.podman(["volume", "inspect", "--format", "{{.Mountpoint}}", `${keeper.name}_data`])).trim();

    await engine.down(keeper);
    expect(await podmanContainers(keeper.name)).toEqual([]);
    expect(await volumes()).toEqual([`${keeper.name}_data`]);
    expect(readFileSync(path.join(mountpoint, "mark"), "utf8")).toBe("kept\n");

    await engine.up(keeper);
    await waitUntilRunning(engine, keeper.name, 60_000, { pollMs: 250 });
    await engine.down(keeper, { volumes: true });
    expect(await podmanContainers(keeper.name)).toEqual([]);
    expect(await volumes()).toEqual([]);
    expect(existsSync(mountpoint)).toBe(false);
  });

  it("lists leftover projects by prefix, and down removes every container and network from the name alone", async () => {
    const leftovers = await engine.projects(prefix);
    expect(leftovers).toEqual(expect.arrayContaining([web.name, `${prefix}crash`, `${prefix}sick`, `${prefix}slow`]));
    expect(leftovers.every((name) => name.startsWith(prefix))).toBe(true);
    expect(await engine.projects(`${prefix}zzz`)).toEqual([]);

    await rm(web.dir, { recursive: true });
    await engine.down({ name: web.name });
    expect(await engine.containers(web.name)).toEqual([]);
    expect(await podmanContainers(web.name)).toEqual([]);
    expect(await harness.podman(["network", "ls", "-q", "--filter", `label=com.docker.compose.project=${web.name}`])).toBe("");
    expect(await engine.projects(prefix)).not.toContain(web.name);
    // A second down of a project that is gone is no error (a restart after a crash repeats it).
    await engine.down({ name: web.name });
  });
});
