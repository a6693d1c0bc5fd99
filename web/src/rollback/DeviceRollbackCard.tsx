// Rolling one device back: per application it ran, the version a rollback would return it to
// (the last one that ran successfully on it, asked of the API without changing anything), and
// the action, confirmed with both versions named. The rollback is an all-at-once deployment
// of that version for this device, which replaces the current one.
import { useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Undo2 } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import { ConfirmDialog } from "../ui/Dialog";
import { ErrorBox, Loading } from "../ui/states";
import { useToast } from "../ui/toast";
import "./rollback.css";

/** Enough of the history to name every application the device ran (one entry per install attempt). */
const HISTORY_FOR_APPLICATIONS = 100;

export function DeviceRollbackCard({ device }: { device: { id: string; name: string } }) {
  const history = useQuery(q.rollback.history.options({ id: device.id, limit: HISTORY_FOR_APPLICATIONS, offset: 0 }));
  const applications = new Map<string, string>();
  for (const h of history.data?.items ?? []) if (!applications.has(h.applicationId)) applications.set(h.applicationId, h.applicationName ?? "a deleted application");
  if (history.isError) return null; // the version history card below shows the error
  if (history.isPending) return <Loading label="Loading what the device can roll back" />;
  if (applications.size === 0) return null;
  return (
    <Card title="Roll back">
      <ul className="stack rollback-list">
        {[...applications].map(([applicationId, name]) => (
          <ApplicationRollback key={applicationId} device={device} applicationId={applicationId} applicationName={name} />
        ))}
      </ul>
    </Card>
  );
}

function ApplicationRollback({ device, applicationId, applicationName }: { device: { id: string; name: string }; applicationId: string; applicationName: string }) {
  const canWrite = useCan("deployments:write");
  const queryClient = useQueryClient();
  const toast = useToast();
  const [confirming, setConfirming] = useState(false);
  const target = useQuery(q.rollback.target.options({ id: device.id, applicationId }));
  const t = target.data;
  async function rollBack() {
    const result = await q.rollback.device.call({ id: device.id, applicationId });
    toast.success(`${device.name} rolls back ${applicationName} from ${result.fromVersion ?? "none"} to ${result.toVersion}`);
    await Promise.all([queryClient.invalidateQueries({ queryKey: q.rollback.key() }), queryClient.invalidateQueries({ queryKey: q.deployments.key() })]);
  }
  return (
    <li className="row rollback-item" aria-label={`Roll back ${applicationName}`}>
      <div className="cell-stack">
        <strong>{applicationName}</strong>
        {target.isError ? (
          <ErrorBox error={target.error} />
        ) : !t ? (
          <span className="faint">Reading the rollback target…</span>
        ) : t.available ? (
          <span data-testid="rollback-target">runs <code>{t.currentVersion ?? "none"}</code>; last good version <code>{t.targetVersion}</code></span>
        ) : (
          <span className="muted">runs <code>{t.currentVersion ?? "none"}</code>; no other version ran successfully on this device, so there is nothing to roll back to</span>
        )}
      </div>
      {canWrite && t?.available && (
        <Button icon={<Undo2 />} onClick={() => setConfirming(true)}>Roll back to {t.targetVersion}</Button>
      )}
      {t && (
        <ConfirmDialog
          open={confirming}
          onClose={() => setConfirming(false)}
          title={`Roll back ${applicationName} on ${device.name}?`}
          confirmLabel={`Roll back to ${t.targetVersion}`}
          onConfirm={rollBack}
        >
          <p>
            {device.name} goes from <code>{t.currentVersion ?? "none"}</code> back to <code>{t.targetVersion}</code>, the last version that ran successfully on it. A
            rollback deployment of that version is created and started for this device and replaces the deployment it runs now.
          </p>
          <p className="muted">Its progress shows in the desired state above as the device reports it.</p>
        </ConfirmDialog>
      )}
    </li>
  );
}
