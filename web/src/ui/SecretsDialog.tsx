// Setting the secrets of a resource managed as code (docs/config-as-code.md, "Secrets"): its
// documents never hold a registry's credential or a notification target's URL and signing
// secret, so the resource waits for them ("pending secret") and the ownership guard lets a
// change of only those fields through. Fields left empty are not sent (the stored value stays).
import { useId, useState } from "react";
import type { QueryKey } from "@tanstack/react-query";
import { Dialog } from "./Dialog";
import { FormFooter } from "./FormFooter";
import { useAction } from "./useAction";

export interface SecretField {
  key: string;
  label: string;
  hint?: string;
  /** typed as a password (never shown again) */
  password?: boolean;
}

export function SecretsDialog({ title, fields, save, invalidates, success, onClose }: {
  title: string;
  fields: SecretField[];
  /** sends the typed values (only the filled ones) */
  save: (values: Record<string, string>) => Promise<unknown>;
  invalidates: QueryKey[];
  success: string;
  onClose: () => void;
}) {
  const prefix = useId();
  const [values, setValues] = useState<Record<string, string>>({});
  const filled = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v.trim()]).filter(([, v]) => v !== ""));
  const action = useAction({ mutationFn: (v: Record<string, string>) => save(v) }, { invalidates, success, onSuccess: onClose });
  return (
    <Dialog open onClose={onClose} title={title}>
      <form className="stack" onSubmit={action.submit(() => filled)} noValidate>
        <p className="muted">Managed as code: its documents never hold these. Empty fields keep what is stored.</p>
        {fields.map((f) => (
          <div className="field" key={f.key}>
            <label htmlFor={`${prefix}-${f.key}`}>{f.label}</label>
            <input
              id={`${prefix}-${f.key}`} className={f.password ? "input" : "input mono"} type={f.password ? "password" : "text"} autoComplete={f.password ? "new-password" : "off"}
              value={values[f.key] ?? ""} onChange={(e) => setValues((v) => ({ ...v, [f.key]: e.target.value }))}
            />
            {f.hint && <span className="field__hint">{f.hint}</span>}
          </div>
        ))}
        <FormFooter action={action} onCancel={onClose} disabled={Object.keys(filled).length === 0} submitLabel="Save" />
      </form>
    </Dialog>
  );
}
