// Upgrading a running deployment in place (docs/deployments.md, "Upgrading a running
// deployment"): choose a version of its application, read what will happen under the
// deployment's own strategy, confirm. The service starts the update rollout (PATCH with the
// version); a staged rollout still in flight cannot be upgraded: the dialog says why.
import { useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import type { RouterOutputs } from "../../api/client";
import { q } from "../../api/query";
import { ConfirmDialog } from "../../ui/Dialog";
import { useToast } from "../../ui/toast";
import { counted } from "../../../../src/lib/plural";
import { TERMINAL_ROLLOUT_STATES } from "../../../../src/modules/deployments/rollout-moves";

type Deployment = RouterOutputs["deployments"]["get"];

/** What the update rollout will do, in words, under the deployment's strategy. */
function consequence(d: Deployment, version: string): string {
  const devices = counted(d.progress.total - d.progress.skipped - d.progress.cancelled - d.progress.superseded, "device");
  if (d.strategy.type === "all-at-once") {
    return `Every device of the deployment (${devices} now) is told to install ${version} at once, in place of ${d.version}.`;
  }
  const canary = "count" in d.strategy.canary ? counted(d.strategy.canary.count, "device") : `${d.strategy.canary.percent} % of the devices`;
  return (
    `An update rollout starts under the deployment's staged strategy: the canary (${canary}) gets ${version} first, then the batches ` +
    `${d.strategy.autoAdvance ? "follow as each succeeds" : "follow as you approve them"}. Until its batch is reached, a device keeps running ${d.version}; ` +
    "abort keeps each device on the version it has."
  );
}

export function UpgradeDialog({ deployment, open, onClose }: { deployment: Deployment; open: boolean; onClose: () => void }) {
  const queryClient = useQueryClient();
  const toast = useToast();
  const versions = useQuery({ ...q.applications.versions.options({ id: deployment.applicationId, limit: 100, offset: 0 }), enabled: open });
  const others = (versions.data?.items ?? []).map((v) => v.version).filter((v) => v !== deployment.version);
  const [chosen, setChosen] = useState("");
  const version = chosen || others[0] || "";
  const inFlight = deployment.strategy.type === "staged" && !TERMINAL_ROLLOUT_STATES.includes(deployment.rolloutState);
  const why = inFlight
    ? `Its rollout is ${deployment.rolloutState.replace("_", " ")}: wait until it completes, or abort it, before upgrading.`
    : others.length === 0 && versions.data
      ? `${deployment.applicationName} has no other version in the catalog.`
      : null;
  async function upgrade() {
    await q.deployments.update.call({ id: deployment.id, version });
    await queryClient.invalidateQueries({ queryKey: q.deployments.key() });
    toast.success(`Update rollout of ${deployment.name} to ${version} started`);
  }
  return (
    <ConfirmDialog
      open={open}
      onClose={onClose}
      title={`Upgrade ${deployment.name}`}
      confirmLabel={version ? `Upgrade to ${version}` : "Upgrade"}
      onConfirm={upgrade}
      danger={false}
      confirmable={why === null && !!version}
    >
      {why ? (
        <p>{why}</p>
      ) : (
        <>
          <div className="field">
            <label htmlFor="upgrade-version">Version</label>
            <select id="upgrade-version" className="select" value={version} disabled={!versions.data} onChange={(e) => setChosen(e.target.value)}>
              {others.map((v) => <option key={v} value={v}>{v}</option>)}
            </select>
          </div>
          <p>It runs {deployment.applicationName} {deployment.version} now.</p>
          {version && <p>{consequence(deployment, version)}</p>}
          <p>The target, strategy and parameters stay as they are (parameter values are checked against the new version).</p>
        </>
      )}
    </ConfirmDialog>
  );
}
