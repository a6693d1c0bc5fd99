// A deployment's one state (src/modules/deployments/deployment-state.ts, answered by the API as
// `state`), in the same words and tone on the deployments list, the deployment page and the
// overview.
import { deploymentStateText } from "../../../src/modules/deployments/deployment-state";
import { STATE_TONE, type Deployment } from "./types";

export function StateBadge({ deployment }: { deployment: Pick<Deployment, "state"> }) {
  return <span className={`badge ${STATE_TONE[deployment.state]}`} data-testid="deployment-state">{deploymentStateText(deployment.state)}</span>;
}
