// The desired state a heartbeat answers, and what happens to the deployment progress a
// device reports (both belong to the deployments capability: src/modules/deployments/agent-state.ts).
import type { Services } from "../../services.js";
import { desiredDeploymentsOf, recordDeploymentProgress } from "../deployments/agent-state.js";
import type { DesiredDeployment } from "./schemas.js";

export interface HeartbeatDevice {
  id: string;
  organizationId: string;
}

export interface DeploymentProgress {
  deploymentId: string;
  state: "pending" | "downloading" | "installing" | "running" | "failed" | "removing" | "removed";
  message?: string;
  attempt?: number;
  /** with failed: the release the device runs again instead (the deployment that installed it, its version) */
  rolledBackTo?: { deploymentId: string; version: string };
}

/**
 * Records the reports first, so that the answer already reflects what they changed (a next batch, a removal).
 * `variables`: the device's configuration variables, for parameters that take them (docs/configuration.md).
 */
export async function desiredStateOf(
  services: Services, device: HeartbeatDevice, reports: DeploymentProgress[] | undefined, variables?: () => Record<string, string> | null,
): Promise<DesiredDeployment[]> {
  if (reports?.length) await recordDeploymentProgress(services, device, reports);
  return desiredDeploymentsOf(services, device, variables);
}
