// Actions on the selected devices: one request for all of them (the API applies a bulk
// change as one statement), confirmed with the number of devices it touches. Both change what
// the device list and the groups (selected by label) show.
import { useState } from "react";
import { q } from "../api/query";
import { LABEL_KEY_PATTERN, LABEL_KEY_RULE, LABEL_VALUE_PATTERN, LABEL_VALUE_RULE } from "../../../src/modules/devices/selector";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { useAction } from "../ui/useAction";
import { counted } from "../../../src/lib/plural";

const devices = (n: number) => counted(n, "device");
const CHANGED = () => [q.devices.key(), q.groups.key()];

/** Mounted while open: each opening starts from an empty label. */
export function BulkLabelDialog({ onClose, deviceIds, onDone }: { onClose: () => void; deviceIds: string[]; onDone: () => void }) {
  const [mode, setMode] = useState<"set" | "remove">("set");
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const keyProblem = key && !LABEL_KEY_PATTERN.test(key) ? LABEL_KEY_RULE : null;
  const valueProblem = mode === "set" && !LABEL_VALUE_PATTERN.test(value) ? LABEL_VALUE_RULE : null;
  const apply = useAction(q.groups.bulkLabels.mutation(), {
    invalidates: CHANGED(),
    success: (result, input) => input.set ? `${key}=${value} set on ${devices(result.updated)}` : `${key} removed from ${devices(result.updated)}`,
    onSuccess: () => {
      onDone();
      onClose();
    },
  });

  return (
    <Dialog open onClose={onClose} title={`Label ${devices(deviceIds.length)}`}>
      <form className="stack" onSubmit={apply.submit(() => (mode === "set" ? { deviceIds, set: { [key]: value } } : { deviceIds, remove: [key] }))}>
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
        <FormFooter
          action={apply}
          onCancel={onClose}
          disabled={!key || !!keyProblem || !!valueProblem}
          submitLabel={mode === "set" ? `Set label on ${devices(deviceIds.length)}` : `Remove label from ${devices(deviceIds.length)}`}
        />
      </form>
    </Dialog>
  );
}

export function BulkDeleteDialog({ open, onClose, deviceIds, onDone }: { open: boolean; onClose: () => void; deviceIds: string[]; onDone: () => void }) {
  const remove = useAction({ mutationFn: () => q.groups.bulkDelete.call({ deviceIds }) }, {
    invalidates: CHANGED(),
    success: (result) => `${devices(result.deleted)} deleted, ${counted(result.revokedCertificates, "certificate")} revoked`,
    onSuccess: onDone,
  });
  return (
    <ConfirmDialog open={open} onClose={onClose} title={`Delete ${devices(deviceIds.length)}?`} confirmLabel={`Delete ${devices(deviceIds.length)}`} action={remove}>
      <p>
        {devices(deviceIds.length)} will be removed from the fleet and their certificates revoked: they can no longer
        connect until they enroll again. Their telemetry, logs and history are deleted with them. This cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
