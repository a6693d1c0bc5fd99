// Create or edit a registry of any kind (Git, OCI, global OCI). The credential field is a
// password field that starts empty: the stored credential never comes back, an edit that leaves
// it empty keeps it.
import { useEffect } from "react";
import { Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import type { Action } from "../ui/useAction";
import { EMPTY_FORM, formProblems, type RegistryForm, type RegistryKind } from "./forms";
import { useFormFields } from "../ui/useFormFields";
import { AuthTypeField, BranchPathFields, CredentialField } from "./GitConnectionFields";

const KIND_NAME: Record<RegistryKind, string> = { git: "Git registry", oci: "OCI registry", global: "global OCI registry" };
/** "a Git registry", "an OCI registry": the article follows the sound. */
const WITH_ARTICLE: Record<RegistryKind, string> = { git: "a Git registry", oci: "an OCI registry", global: "a global OCI registry" };

export function RegistryDialog({ kind, open, initial, hasCredentials, onClose, action }: {
  kind: RegistryKind;
  open: boolean;
  /** the registry being edited, as a form; null: a new one */
  initial: RegistryForm | null;
  hasCredentials?: boolean;
  onClose: () => void;
  /** creates or saves; closes the dialog on success */
  action: Action<RegistryForm>;
}) {
  const editing = initial !== null;
  const { form, set, reset, valid, id, problem, described } = useFormFields<RegistryForm>(initial ?? EMPTY_FORM, `${kind}-registry`, (f) => formProblems(kind, f, editing));
  useEffect(() => {
    if (open) {
      reset(initial ?? EMPTY_FORM);
      action.reset();
    }
  }, [open]); // eslint-disable-line react-hooks/exhaustive-deps

  return (
    <Dialog open={open} onClose={onClose} title={editing ? `Edit ${KIND_NAME[kind]} “${initial.name}”` : `Add ${WITH_ARTICLE[kind]}`}>
      <form className="stack" onSubmit={action.submit(() => form, { valid })} noValidate>
        <div className="field">
          <label htmlFor={id("name")}>Name</label>
          <input id={id("name")} className="input" value={form.name} maxLength={100} onChange={(e) => set("name", e.target.value)} {...described("name")} />
          {problem("name")}
        </div>
        <div className="field">
          <label htmlFor={id("url")}>URL</label>
          <input id={id("url")} className="input mono" value={form.url} placeholder={kind === "git" ? "https://git.example.com/apps.git" : "https://registry.example.com"} onChange={(e) => set("url", e.target.value)} {...described("url")} />
          {problem("url")}
        </div>
        {kind === "git" ? (
          <BranchPathFields
            id={id} branch={form.branch} path={form.path} onBranch={(v) => set("branch", v)} onPath={(v) => set("path", v)}
            described={described("branch")} problem={problem("branch")} pathLabel="Path" pathHint="The folder holding the manifests."
          />
        ) : (
          <>
            <div className="field">
              <label htmlFor={id("description")}>Description <span className="faint">(optional)</span></label>
              <input id={id("description")} className="input" value={form.description} maxLength={500} onChange={(e) => set("description", e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor={id("repositories")}>Repositories</label>
              <textarea id={id("repositories")} className="input mono" rows={3} value={form.repositories} placeholder="edge/vision" onChange={(e) => set("repositories", e.target.value)} />
              <span className="field__hint">One per line{kind === "global" ? "; none: the registry's catalog is listed" : ""}.</span>
            </div>
            <label className="row"><input type="checkbox" checked={form.verifyTls} onChange={(e) => set("verifyTls", e.target.checked)} /> Verify TLS certificates</label>
          </>
        )}
        {kind === "global" && (
          <div className="grid grid--2">
            <div className="field">
              <label htmlFor={id("priority")}>Priority</label>
              <input id={id("priority")} className="input" type="number" min={0} max={1_000_000} value={form.priority} onChange={(e) => set("priority", e.target.value)} {...described("priority")} />
              <span className="field__hint">Lower comes first in every store's registry list.</span>
              {problem("priority")}
            </div>
            <label className="row"><input type="checkbox" checked={form.mandatory} onChange={(e) => set("mandatory", e.target.checked)} /> Mandatory (synced for every organization)</label>
          </div>
        )}
        <div className="grid grid--2">
          <AuthTypeField id={id("auth")} value={form.authType} onChange={(v) => set("authType", v)} />
          <div className="field">
            <label htmlFor={id("interval")}>Sync interval (minutes)</label>
            <input id={id("interval")} className="input" type="number" min={0} max={10_080} value={form.syncIntervalMinutes} onChange={(e) => set("syncIntervalMinutes", e.target.value)} {...described("syncIntervalMinutes")} />
            <span className="field__hint">0: manual syncs only.</span>
            {problem("syncIntervalMinutes")}
          </div>
        </div>
        <CredentialField
          id={id("credential")} authType={form.authType} value={form.credential} onChange={(v) => set("credential", v)}
          described={described("credential")} problem={problem("credential")} keepHint={editing && hasCredentials}
        />
        <FormFooter action={action} onCancel={onClose} disabled={!valid} submitLabel={editing ? "Save" : `Add ${KIND_NAME[kind]}`} />
      </form>
    </Dialog>
  );
}
