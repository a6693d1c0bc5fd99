// Actions on the selected devices: one request for all of them (the API applies a bulk
// change as one statement), confirmed with the number of devices it touches.
import { useState } from "react";
import { q } from "../api/query";
import { LABEL_KEY_PATTERN, LABEL_KEY_RULE, LABEL_VALUE_PATTERN, LABEL_VALUE_RULE } from "../../../src/modules/devices/selector";
import { Button } from "../ui/Button";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { ErrorBox } from "../ui/states";
import { useToast } from "../ui/toast";
import { counted } from "../../../src/lib/plural";

const devices = (n: number) => counted(n, "device");

export function BulkLabelDialog({ open, onClose, deviceIds, onDone }: { open: boolean; onClose: () => void; deviceIds: string[]; onDone: () => Promise<void> }) {
  const toast = useToast();
  const [mode, setMode] = useState<"set" | "remove">("set");
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const keyProblem = key && !LABEL_KEY_PATTERN.test(key) ? LABEL_KEY_RULE : null;
  const valueProblem = mode === "set" && !LABEL_VALUE_PATTERN.test(value) ? LABEL_VALUE_RULE : null;

  async function apply() {
    setBusy(true);
    setError(null);
    try {
      const result = await q.groups.bulkLabels.call(mode === "set" ? { deviceIds, set: { [key]: value } } : { deviceIds, remove: [key] });
      toast.success(mode === "set" ? `${key}=${value} set on ${devices(result.updated)}` : `${key} removed from ${devices(result.updated)}`);
      await onDone();
      onClose();
      setKey("");
      setValue("");
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      open={open}
      onClose={onClose}
      title={`Label ${devices(deviceIds.length)}`}
      footer={
        <>
          <Button onClick={onClose}>Cancel</Button>
          <Button variant="primary" onClick={apply} busy={busy} disabled={!key || !!keyProblem || !!valueProblem}>
            {mode === "set" ? `Set label on ${devices(deviceIds.length)}` : `Remove label from ${devices(deviceIds.length)}`}
          </Button>
        </>
      }
    >
      <div className="stack">
        <fieldset className="radio-row">
          <legend className="field__label">Action</legend>
          <label><input type="radio" name="bulk-mode" checked={mode === "set"} onChange={() => setMode("set")} /> Set (add or overwrite)</label>
          <label><input type="radio" name="bulk-mode" checked={mode === "remove"} onChange={() => setMode("remove")} /> Remove</label>
        </fieldset>
        <div className="field">
          <label htmlFor="bulk-key">Key</label>
          <input id="bulk-key" className="input mono" value={key} onChange={(e) => setKey(e.target.value.trim())} aria-invalid={keyProblem ? true : undefined} />
          {keyProblem && <span className="field__error">{keyProblem}</span>}
        </div>
        {mode === "set" && (
          <div className="field">
            <label htmlFor="bulk-value">Value</label>
            <input id="bulk-value" className="input mono" value={value} onChange={(e) => setValue(e.target.value)} aria-invalid={valueProblem ? true : undefined} />
            {valueProblem && <span className="field__error">{valueProblem}</span>}
          </div>
        )}
        {error != null && <ErrorBox error={error} />}
      </div>
    </Dialog>
  );
}

export function BulkDeleteDialog({ open, onClose, deviceIds, onDone }: { open: boolean; onClose: () => void; deviceIds: string[]; onDone: () => Promise<void> }) {
  const toast = useToast();
  return (
    <ConfirmDialog
      open={open}
      onClose={onClose}
      title={`Delete ${devices(deviceIds.length)}?`}
      confirmLabel={`Delete ${devices(deviceIds.length)}`}
      onConfirm={async () => {
        const result = await q.groups.bulkDelete.call({ deviceIds });
        toast.success(`${devices(result.deleted)} deleted, ${counted(result.revokedCertificates, "certificate")} revoked`);
        await onDone();
      }}
    >
      <p>
        {devices(deviceIds.length)} will be removed from the fleet and their certificates revoked: they can no longer
        connect until they enroll again. Their telemetry, logs and history are deleted with them. This cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
