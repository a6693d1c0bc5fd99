// A device's Actions menu (docs/actions.md): check its health, collect diagnostics, renew its
// certificate at once; reboot, restart the agent, restart/stop/start an application after a
// confirmation that names the device (they change what runs). The shell's menu styles
// (app/shell.css). The kinds that need
// actions:disruptive are offered only to those who hold it, as the API checks.
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { ChevronDown, Zap } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { ConfirmDialog } from "../ui/Dialog";
import { useAction } from "../ui/useAction";
import { APP_KINDS, DISRUPTIVE_KINDS, type ActionKind, type OperatorKind } from "../../../src/modules/device-actions/kinds";
import type { Device } from "./types";

/** How the menu and its confirmations name each kind. */
export const ACTION_LABELS: Record<ActionKind, string> = {
  "check-health": "Check health",
  diagnostics: "Collect diagnostics",
  "renew-certificate": "Renew certificate now",
  reboot: "Reboot",
  "restart-agent": "Restart agent",
  "restart-app": "Restart application",
  "stop-app": "Stop application",
  "start-app": "Start application",
  // a configuration layer's rollout (never in the menu: a layer's PATCH with rollout starts it)
  "apply-configuration": "Apply configuration",
};

const WHAT_HAPPENS: Partial<Record<ActionKind, string>> = {
  reboot: "The device reboots with its next heartbeat (unless an application on it holds a lease that defers it). Everything on it stops until it is back.",
  "restart-agent": "The agent exits and its service manager starts it again; the applications keep running.",
  "restart-app": "The application's containers are taken down and started again: it is unavailable meanwhile.",
  "stop-app": "The application's containers are taken down (its volumes stay) until it is started again.",
  "start-app": "The application's containers are brought up again.",
};

/** What a confirmation asks and its button says, naming the device: "Reboot press-1". */
function phrase(kind: ActionKind, device: string): string {
  if (kind === "reboot") return `Reboot ${device}`;
  if (kind === "restart-agent") return `Restart the agent of ${device}`;
  return `${ACTION_LABELS[kind]} on ${device}`;
}

const MENU: OperatorKind[] = ["check-health", "diagnostics", "renew-certificate", "reboot", "restart-agent", "restart-app", "stop-app", "start-app"];

export function DeviceActionsMenu({ device: d }: { device: Device }) {
  const canWrite = useCan("actions:write");
  const canDisrupt = useCan("actions:disruptive");
  const [open, setOpen] = useState(false);
  const [confirming, setConfirming] = useState<OperatorKind | null>(null);
  const [deploymentId, setDeploymentId] = useState("");
  const needsApp = confirming !== null && APP_KINDS.includes(confirming);
  const entries = useQuery({ ...q.deployments.ofDevice.options({ id: d.id, limit: 100, offset: 0 }), enabled: needsApp });
  const running = entries.data?.items.filter((e) => e.desiredAction === "install") ?? [];
  const sent = (kind: ActionKind) => `${ACTION_LABELS[kind]}: sent to ${d.name}; the device runs it with its next heartbeat`;
  const now = useAction({ mutationFn: (kind: OperatorKind) => q.deviceActions.create.call({ deviceId: d.id, kind }) }, {
    invalidates: [q.deviceActions.key()], success: (_out, kind) => sent(kind), failure: (kind) => `${ACTION_LABELS[kind]} failed`,
  });
  const confirmed = useAction({
    mutationFn: () => q.deviceActions.create.call({ deviceId: d.id, kind: confirming!, ...(needsApp ? { deploymentId } : {}) }),
  }, { invalidates: [q.deviceActions.key()], success: () => sent(confirming!) });
  if (!canWrite) return null;

  const choose = (kind: OperatorKind) => {
    setOpen(false);
    if (DISRUPTIVE_KINDS.includes(kind)) {
      setDeploymentId("");
      setConfirming(kind);
    } else void now.run(kind);
  };
  const offered = MENU.filter((k) => canDisrupt || !DISRUPTIVE_KINDS.includes(k));
  const asked = confirming ? phrase(confirming, d.name) : "";

  return (
    <div className="menu" onKeyDown={(e) => e.key === "Escape" && setOpen(false)}>
      <Button icon={<Zap />} aria-haspopup="menu" aria-expanded={open} busy={now.isPending} onClick={() => setOpen(!open)}>
        Actions <ChevronDown aria-hidden="true" size={14} />
      </Button>
      {open && (
        <div className="menu__panel menu__panel--right">
        <ul role="menu" aria-label={`Actions on ${d.name}`} className="menu__list">
          {offered.map((kind) => (
            <li role="none" key={kind}>
              <button type="button" role="menuitem" className="menu__item" onClick={() => choose(kind)}>
                {ACTION_LABELS[kind]}{DISRUPTIVE_KINDS.includes(kind) || APP_KINDS.includes(kind) ? "…" : ""}
              </button>
            </li>
          ))}
        </ul>
        </div>
      )}
      <ConfirmDialog
        open={confirming !== null}
        onClose={() => setConfirming(null)}
        title={`${asked}?`}
        confirmLabel={asked}
        action={confirmed}
        confirmable={!needsApp || !!deploymentId}
      >
        <p>{confirming && WHAT_HAPPENS[confirming]}</p>
        {needsApp && (
          <div className="field">
            <label htmlFor="action-deployment">Application (the deployment it runs)</label>
            <select id="action-deployment" className="select" value={deploymentId} onChange={(e) => setDeploymentId(e.target.value)}>
              <option value="">{entries.isPending ? "Loading…" : running.length ? "Choose one" : "The device runs no deployment"}</option>
              {running.map((e) => <option key={e.deploymentId} value={e.deploymentId}>{e.deploymentName} ({e.applicationName})</option>)}
            </select>
          </div>
        )}
      </ConfirmDialog>
    </div>
  );
}
