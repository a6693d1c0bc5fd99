// A Git connection's fields, in every form that has one (a Git registry, a config source): the
// branch and folder, how it authenticates, and the credential as a password field that starts
// empty (never shown again).
import type { ReactNode } from "react";
import type { AuthType } from "./forms";

export function AuthTypeField({ id, value, onChange }: { id: string; value: AuthType; onChange: (value: AuthType) => void }) {
  return (
    <div className="field">
      <label htmlFor={id}>Authentication</label>
      <select id={id} className="select" value={value} onChange={(e) => onChange(e.target.value as AuthType)}>
        <option value="NONE">None</option>
        <option value="BASIC">Username and password</option>
        <option value="TOKEN">Token</option>
      </select>
    </div>
  );
}

/** Nothing without authentication. `described` and `problem` come from the form's useFormFields. */
export function CredentialField({ id, authType, value, onChange, described, problem, keepHint }: {
  id: string;
  authType: AuthType;
  value: string;
  onChange: (value: string) => void;
  described: object;
  problem: ReactNode;
  /** an edit of something that has a stored credential: empty keeps it */
  keepHint?: boolean;
}) {
  if (authType === "NONE") return null;
  return (
    <div className="field">
      <label htmlFor={id}>{authType === "BASIC" ? "Credential (username:password)" : "Token"}</label>
      <input id={id} className="input" type="password" autoComplete="new-password" value={value} onChange={(e) => onChange(e.target.value)} {...described} />
      <span className="field__hint">Stored encrypted and never shown again.{keepHint ? " Leave empty to keep the stored one." : ""}</span>
      {problem}
    </div>
  );
}

export function BranchPathFields({ id, branch, path, onBranch, onPath, described, problem, pathLabel, pathHint }: {
  /** the form's id of a field name */
  id: (field: string) => string;
  branch: string;
  path: string;
  onBranch: (value: string) => void;
  onPath: (value: string) => void;
  /** the branch field's wiring and problem, from the form's useFormFields */
  described: object;
  problem: ReactNode;
  pathLabel: string;
  pathHint: string;
}) {
  return (
    <div className="grid grid--2">
      <div className="field">
        <label htmlFor={id("branch")}>Branch</label>
        <input id={id("branch")} className="input mono" value={branch} onChange={(e) => onBranch(e.target.value)} {...described} />
        {problem}
      </div>
      <div className="field">
        <label htmlFor={id("path")}>{pathLabel}</label>
        <input id={id("path")} className="input mono" value={path} onChange={(e) => onPath(e.target.value)} />
        <span className="field__hint">{pathHint}</span>
      </div>
    </div>
  );
}
