// The desired state a heartbeat answers, and what happens to the deployment progress a
// device reports. The deployments capability plugs in here (registerDesiredStateProvider)
// without the heartbeat path knowing about it; with no provider the answer is empty and the
// heartbeat costs no extra query.
import type { DbTx } from "../../db/client.js";
import type { DesiredDeployment } from "./schemas.js";

export interface HeartbeatDevice {
  id: string;
  organizationId: string;
}

export interface DeploymentProgress {
  deploymentId: string;
  state: "pending" | "downloading" | "installing" | "running" | "failed" | "removing" | "removed";
  message?: string;
}

export interface DesiredStateProvider {
  /** the deployments this device must run or remove, as the heartbeat answers them */
  desiredDeployments(db: DbTx, device: HeartbeatDevice): Promise<DesiredDeployment[]>;
  /** progress the device reported; entries for deployments it was never given are ignored by the provider */
  recordProgress?(db: DbTx, device: HeartbeatDevice, reports: DeploymentProgress[]): Promise<void>;
}

// Code wiring (like the router), not per-process state: providers are stateless functions of the db.
const providers = new Set<DesiredStateProvider>();

/** Returns the function that unregisters it (tests). */
export function registerDesiredStateProvider(provider: DesiredStateProvider): () => void {
  providers.add(provider);
  return () => providers.delete(provider);
}

export async function desiredStateOf(db: DbTx, device: HeartbeatDevice, reports: DeploymentProgress[] | undefined) {
  const deployments: DesiredDeployment[] = [];
  for (const provider of providers) {
    if (reports?.length && provider.recordProgress) await provider.recordProgress(db, device, reports);
    deployments.push(...(await provider.desiredDeployments(db, device)));
  }
  return deployments;
}
