// The fleet agent end to end on Docker (`fleet-agent run --engine docker`): the lab of
// agent-e2e.test.ts (the service as `npm start` runs it, a Git registry's application, compose
// packages and images in local registries; test/support/agent-lab.ts) with a Docker daemon of its
// own (Debian's docker.io, test/support/docker.ts) and its compose program (Debian 12 packages
// Compose v1, `docker-compose`; the `docker compose` plugin's command lines are covered against a
// fake docker in test/unit/agent/docker-engine.test.ts). Everything on loopback.
//
//   version 1 runs with its parameter; version 2 replaces it; version 3's container exits and
//   version 2 runs again on the device; a private image pinned by digest comes through the
//   service's registry proxy with a pull grant; removal leaves no container.
//
// Once per CI run (the PGlite phase): what it adds to agent-e2e.test.ts is the engine, not the database.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LAB_PRIVATE_DIGEST_VERSION, startAgentLab, type AgentLab } from "../support/agent-lab.js";
import { peerAvailable, peersAvailable } from "../support/peers.js";
import { eventually } from "../support/server-process.js";

const withPrivateRegistry = peerAvailable("htpasswd");

describe.skipIf(!peersAvailable("dockerd", "podman", "docker-registry"))("fleet-agent on Docker against the service", { timeout: 240_000 }, () => {
  let lab: AgentLab;
  const deploymentIds: Record<string, string> = {};
  const deploy = async (version: string, parameters: Record<string, unknown> = {}) => (deploymentIds[version] = await lab.deploy(version, parameters));

  beforeEach(({ onTestFailed }) => onTestFailed(() => console.error(`fleet-agent printed:\n${lab?.agentOutput.slice(-60).join("\n")}`)));

  beforeAll(async () => {
    lab = await startAgentLab({ engine: "docker", privateRegistry: withPrivateRegistry, agentEnv: { FLEET_AGENT_TELEMETRY_SECONDS: "2", FLEET_AGENT_LOG_SECONDS: "2" } });
  }, 300_000);
  afterAll(async () => {
    await lab?.close();
  }, 120_000);

  it("runs version 1 on Docker: the page shows the deployment's parameter, the telemetry counts its container, its log reaches the service", async () => {
    await lab.enroll(["--name", "docker-gateway"]);
    lab.startAgent();
    const id = await deploy("1.0.0", { greeting: "hallo" });
    await lab.waitForState(id, "running");
    expect(await lab.page()).toBe("version 1.0.0 says hallo");
    expect(lab.agentOutput.join("\n")).toMatch(/fleet-agent \S+ runs as device .* on docker/);
    // the container as Docker lists it, labelled by the compose program
    expect(await lab.projectContainers()).toEqual([expect.stringMatching(/ running$/)]);
    await eventually(async () => {
      const res = await lab.api("GET", `/api/v1/devices/${lab.deviceId}/telemetry/latest`);
      return res.status === 200 && res.body?.containersRunning === 1 && res.body.containersFailed === 0 ? true : undefined;
    }, 60_000, "a telemetry snapshot with the running container");
    await eventually(async () => {
      const logs = await lab.api("GET", `/api/v1/devices/${lab.deviceId}/logs?limit=100`);
      return logs.body?.items?.some((l: { message: string }) => l.message.includes("serving version 1.0.0")) || undefined;
    }, 60_000, "the container's log line at the service");
  });

  it("version 2 replaces version 1 under the same project", async () => {
    const id = await deploy("2.0.0");
    await lab.waitForState(id, "running");
    expect(await lab.page()).toBe("version 2.0.0 says hello");
    expect(await lab.projectContainers()).toHaveLength(1);
  });

  it("version 3 exits: reported failed with its exit code, and version 2 runs again on the device", async () => {
    const id = await deploy("3.0.0");
    const failed = await lab.waitForState(id, "failed");
    expect(failed.message).toMatch(/exited with code 3/);
    expect(failed.message).toMatch(/2\.0\.0 runs again/);
    expect(await lab.page()).toBe("version 2.0.0 says hello");
    expect(await lab.projectContainers()).toHaveLength(1);
  });

  it.skipIf(!withPrivateRegistry)("a private image pinned by digest is pulled through the service's registry proxy by that digest and runs", async () => {
    const registry = lab.privateRegistry!;
    const id = await deploy(LAB_PRIVATE_DIGEST_VERSION, { greeting: "pinned" });
    await lab.waitForState(id, "running");
    expect(await lab.page()).toBe("version 5.0.0 says pinned");
    const project = `fleet-${lab.applicationId}-web`;
    const proxied = `127.0.0.1:${lab.proxy.port}/${registry.id}/fleet-private/busybox@${registry.digest}`;
    // the reference the container was made from (docker ps shows only the repository of a digest reference)
    const [container] = (await lab.docker!.docker(["ps", "-q", "--filter", `label=com.docker.compose.project=${project}`])).trim().split("\n");
    expect((await lab.docker!.docker(["inspect", "--format", "{{.Config.Image}}", container])).trim()).toBe(proxied);
    expect(JSON.parse(await lab.docker!.docker(["image", "inspect", "--format", "{{json .RepoDigests}}", proxied]))).toContain(proxied);
    // Docker itself holds no credential of the private registry: it cannot pull the image by itself.
    await expect(lab.docker!.docker(["pull", registry.image])).rejects.toThrow(/unauthorized|no basic auth credentials|authentication required/i);
  });

  it("removal takes the project down and leaves no container and no network", async () => {
    const current = deploymentIds[withPrivateRegistry ? LAB_PRIVATE_DIGEST_VERSION : "2.0.0"];
    const res = await lab.api("DELETE", `/api/v1/deployments/${current}`);
    expect(res.status, res.text).toBeLessThan(300);
    await eventually(async () => ((await lab.projectContainers()).length === 0 ? true : undefined), 60_000, "no container of the project");
    expect(await lab.page()).toBeNull();
    // Compose v1's `down` removes the containers first and the network after them: the project's
    // containers are gone a moment before `down` returns, so the network is checked once the agent
    // has recorded the removal (the line it prints when `down` has returned, workloads.ts).
    await eventually(async () => (lab.agentOutput.some((l) => l.endsWith(`${lab.applicationId} removed`)) ? true : undefined), 60_000, "the removal recorded");
    const networks = await lab.docker!.docker(["network", "ls", "-q", "--filter", `label=com.docker.compose.project=fleet-${lab.applicationId}-web`]);
    expect(networks.trim()).toBe("");
  });
});
