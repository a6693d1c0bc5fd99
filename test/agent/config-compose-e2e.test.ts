// A device variable in a compose deployment's parameters (issue 48, docs/configuration.md): the
// real agent on Podman (runc) runs web-demo with `greeting: "{{ vars.GREETING }}"`, the service
// rendering it from the organization's configuration layer per device; changing the variable
// in the layer changes the rendered parameters and their parametersHash, and the agent
// re-creates the compose project in place with the new value (new container, the page says it),
// the service holding the deployment running on the device.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startAgentLab, type AgentLab } from "../support/agent-lab.js";
import { peerAvailable } from "../support/peers.js";
import { eventually } from "../support/server-process.js";

const available = peerAvailable("podman") && peerAvailable("docker-registry");

describe.skipIf(!available)("a compose project restarted with a changed device variable", { timeout: 400_000 }, () => {
  let lab: AgentLab;

  const containerIds = async () => {
    const out = await lab.podman.podman(["ps", "--filter", `label=com.docker.compose.project=fleet-${lab.applicationId}-web`, "--format", "{{.ID}}"]);
    return out.trim().split("\n").filter(Boolean);
  };

  beforeEach(({ onTestFailed }) => onTestFailed(() => console.error(`fleet-agent printed:\n${lab?.agentOutput.slice(-60).join("\n")}`)));
  beforeAll(async () => {
    lab = await startAgentLab();
    await lab.enroll(["--name", "variables-gateway"]);
    lab.startAgent();
  }, 400_000);
  afterAll(async () => {
    await lab?.close();
  }, 120_000);

  it("runs with the layer's value, and with the new one once the layer changes", async () => {
    const layer = await lab.call<{ id: string }>("POST", "/api/v1/config-layers", { name: "defaults", kind: "organization", variables: { GREETING: "hallo" } });
    const deploymentId = await lab.deploy("1.0.0", { greeting: "{{ vars.GREETING }}" });
    await lab.waitForState(deploymentId, "running", 240_000);
    expect(await lab.page()).toBe("version 1.0.0 says hallo");
    const before = await containerIds();
    expect(before).toHaveLength(1);

    await lab.call("PATCH", `/api/v1/config-layers/${layer.id}`, { variables: { GREETING: "servus" } });
    await eventually(async () => (await lab.page()) === "version 1.0.0 says servus", 240_000, "the page with the new greeting");
    await lab.waitForState(deploymentId, "running", 120_000);
    const after = await containerIds();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    // re-created in place: the same deployment, installed again on the device
    expect(lab.agentOutput.filter((l) => l.includes(`install (deployment ${deploymentId})`))).toHaveLength(2);
  });
});
