// Generate, upload and renew a CA. The PEM is judged by the service alone (its PKI checks are
// the rules): a refusal shows its message next to the field it is about (ca-facts.ts
// uploadFieldOf), anything else above the buttons, and the dialog stays open.
import { useEffect, useState, type ChangeEvent, type FormEvent, type ReactNode } from "react";
import { isApiError, statusOf, type ApiErrorData, type RouterInputs, type RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { Button } from "../ui/Button";
import { Dialog } from "../ui/Dialog";
import { ErrorBox } from "../ui/states";
import { uploadFieldOf, type CaCertificate, type UploadField } from "./ca-facts";

type CreatedCa = RouterOutputs["caCertificates"]["generate"];
type KeyAlgorithm = NonNullable<RouterInputs["caCertificates"]["generate"]["keyAlgorithm"]>;

/** The API's key algorithms, in its order (checked against its type); the first is its default. */
const KEY_ALGORITHMS = ["ECDSA-P256", "RSA-2048", "RSA-4096"] as const satisfies readonly KeyAlgorithm[];
const DEFAULT_VALIDITY_DAYS = 3650;
const MAX_VALIDITY_DAYS = 36_500;

type FieldErrors = Partial<Record<UploadField | "commonName" | "validityDays", string>>;

/**
 * A refusal split into the messages about fields (shown next to them) and the rest (shown in an
 * ErrorBox). Only 400 and 409 are about the input; other statuses are always "the rest".
 */
function splitRefusal(err: unknown, fieldOf: (message: string, path?: readonly (string | number)[]) => string | null): { fields: FieldErrors; rest: unknown } {
  const status = statusOf(err);
  if (!isApiError(err) || (status !== 400 && status !== 409)) return { fields: {}, rest: err };
  const issues = (err.data as ApiErrorData | undefined)?.issues;
  const fields: Record<string, string> = {};
  if (issues?.length) {
    for (const issue of issues) {
      const field = fieldOf(issue.message, issue.path);
      if (!field) return { fields: {}, rest: err };
      fields[field] ??= issue.message;
    }
    return { fields, rest: null };
  }
  const field = fieldOf(err.message);
  return field ? { fields: { [field]: err.message }, rest: null } : { fields: {}, rest: err };
}

function Field({ id, label, error, hint, children, after }: {
  id: string; label: ReactNode; error?: string; hint?: ReactNode; children: ReactNode;
  /** under the error or hint (the error stays right under its input) */
  after?: ReactNode;
}) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children}
      {error ? <span className="field__error" id={`${id}-error`}>{error}</span> : hint && <span className="field__hint">{hint}</span>}
      {after}
    </div>
  );
}

/** aria-invalid and the error's id for a field that has one. */
const invalid = (id: string, error?: string) => (error ? { "aria-invalid": true as const, "aria-describedby": `${id}-error` } : {});

/** Runs a dialog's call: busy while it runs, its refusal split into field errors and the rest. */
function useSubmit<T>(fieldOf: (message: string, path?: readonly (string | number)[]) => string | null) {
  const [busy, setBusy] = useState(false);
  const [fields, setFields] = useState<FieldErrors>({});
  const [error, setError] = useState<unknown>(null);
  const reset = () => {
    setFields({});
    setError(null);
  };
  async function run(call: () => Promise<T>, done: (result: T) => Promise<void>) {
    setBusy(true);
    reset();
    try {
      await done(await call());
    } catch (err) {
      const split = splitRefusal(err, fieldOf);
      setFields(split.fields);
      setError(split.rest);
    } finally {
      setBusy(false);
    }
  }
  return { busy, fields, error, run, reset };
}

const generateFieldOf = (message: string, path?: readonly (string | number)[]) => {
  const named = path?.[0];
  if (named === "name" || named === "commonName" || named === "validityDays") return named;
  if (/^A CA certificate named /.test(message)) return "name";
  if (/commonName/.test(message)) return "commonName";
  if (/validityDays/.test(message)) return "validityDays";
  return null;
};

export function GenerateCaDialog({ open, onClose, onDone }: { open: boolean; onClose: () => void; onDone: (ca: CreatedCa) => Promise<void> }) {
  const [name, setName] = useState("");
  const [commonName, setCommonName] = useState("");
  const [validity, setValidity] = useState(String(DEFAULT_VALIDITY_DAYS));
  const [keyAlgorithm, setKeyAlgorithm] = useState<KeyAlgorithm>("ECDSA-P256");
  const submit = useSubmit<CreatedCa>(generateFieldOf);
  useEffect(() => {
    if (!open) return;
    setName("");
    setCommonName("");
    setValidity(String(DEFAULT_VALIDITY_DAYS));
    setKeyAlgorithm("ECDSA-P256");
    submit.reset();
  }, [open]); // eslint-disable-line react-hooks/exhaustive-deps
  const days = Number(validity);
  const validityProblem = Number.isInteger(days) && days >= 1 && days <= MAX_VALIDITY_DAYS ? undefined : `A whole number of days from 1 to ${MAX_VALIDITY_DAYS}`;
  const validityError = (validity !== "" && validityProblem) || submit.fields.validityDays;

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    if (validityProblem || !name.trim() || !commonName.trim()) return;
    void submit.run(
      () => q.caCertificates.generate.call({ name: name.trim(), commonName: commonName.trim(), validityDays: days, keyAlgorithm }),
      onDone,
    );
  }

  return (
    <Dialog open={open} onClose={onClose} title="Generate a certificate authority">
      <form className="stack" onSubmit={onSubmit} noValidate>
        <p className="muted">A self-signed root CA; its private key is generated and kept sealed by the service, never shown.</p>
        <Field id="ca-name" label="Name" error={submit.fields.name}>
          <input id="ca-name" className="input" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="Production root 2026" {...invalid("ca-name", submit.fields.name)} />
        </Field>
        <Field id="ca-common-name" label="Common name (CN)" error={submit.fields.commonName} hint="The subject of the certificate: devices' certificates name it as their issuer.">
          <input id="ca-common-name" className="input" maxLength={64} value={commonName} onChange={(e) => setCommonName(e.target.value)} placeholder="Acme Fleet Root CA" {...invalid("ca-common-name", submit.fields.commonName)} />
        </Field>
        <div className="grid grid--2">
          <Field id="ca-validity" label="Validity (days)" error={validityError || undefined} hint="3650: ten years.">
            <input id="ca-validity" className="input" type="number" min={1} max={MAX_VALIDITY_DAYS} value={validity} onChange={(e) => setValidity(e.target.value)} {...invalid("ca-validity", validityError || undefined)} />
          </Field>
          <Field id="ca-key-algorithm" label="Key algorithm">
            <select id="ca-key-algorithm" className="select" value={keyAlgorithm} onChange={(e) => setKeyAlgorithm(e.target.value as KeyAlgorithm)}>
              {KEY_ALGORITHMS.map((a) => <option key={a} value={a}>{a}</option>)}
            </select>
          </Field>
        </div>
        {submit.error != null && <ErrorBox error={submit.error} />}
        <div className="dialog__footer ca-dialog-footer">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" busy={submit.busy} disabled={!name.trim() || !commonName.trim() || !!validityProblem}>Generate CA</Button>
        </div>
      </form>
    </Dialog>
  );
}

/** A PEM field: pasted, or read from a chosen file into the text box (the text is what is sent). */
function PemField({ id, label, value, onChange, error, hint, optional }: {
  id: string; label: string; value: string; onChange: (value: string) => void; error?: string; hint: ReactNode; optional?: boolean;
}) {
  async function readFile(event: ChangeEvent<HTMLInputElement>) {
    const file = event.target.files?.[0];
    if (file) onChange(await file.text());
    event.target.value = "";
  }
  return (
    <Field
      id={id}
      label={<>{label}{optional && <span className="faint"> (optional)</span>}</>}
      error={error}
      hint={hint}
      after={
        <label className="pem-file">
          <span>Or read it from a file</span>
          <input type="file" accept=".pem,.crt,.cer,.key,text/plain" onChange={readFile} aria-label={`${label}: read from a file`} />
        </label>
      }
    >
      <textarea id={id} className="input mono pem-input" rows={6} spellCheck={false} value={value} onChange={(e) => onChange(e.target.value)} placeholder="-----BEGIN ...-----" {...invalid(id, error)} />
    </Field>
  );
}

export function UploadCaDialog({ open, onClose, onDone }: { open: boolean; onClose: () => void; onDone: (ca: CreatedCa) => Promise<void> }) {
  const [name, setName] = useState("");
  const [certificatePem, setCertificatePem] = useState("");
  const [privateKeyPem, setPrivateKeyPem] = useState("");
  const submit = useSubmit<CreatedCa>(uploadFieldOf);
  useEffect(() => {
    if (!open) return;
    setName("");
    setCertificatePem("");
    setPrivateKeyPem("");
    submit.reset();
  }, [open]); // eslint-disable-line react-hooks/exhaustive-deps

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    if (!name.trim() || !certificatePem.trim()) return;
    void submit.run(
      () => q.caCertificates.upload.call({ name: name.trim(), certificatePem, ...(privateKeyPem.trim() ? { privateKeyPem } : {}) }),
      async (ca) => {
        setPrivateKeyPem(""); // the key leaves the page as soon as the service has it
        await onDone(ca);
      },
    );
  }

  return (
    <Dialog open={open} onClose={onClose} title="Upload a certificate authority">
      <form className="stack" onSubmit={onSubmit} noValidate>
        <Field id="upload-name" label="Name" error={submit.fields.name}>
          <input id="upload-name" className="input" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="Corporate issuing CA" {...invalid("upload-name", submit.fields.name)} />
        </Field>
        <PemField
          id="upload-certificate"
          label="Certificate (PEM)"
          value={certificatePem}
          onChange={setCertificatePem}
          error={submit.fields.certificatePem}
          hint="The CA certificate, optionally followed by its issuers, nearest first."
        />
        <PemField
          id="upload-private-key"
          label="Private key (PEM)"
          optional
          value={privateKeyPem}
          onChange={setPrivateKeyPem}
          error={submit.fields.privateKeyPem}
          hint="Unencrypted PKCS#8, SEC1 or PKCS#1, stored sealed. Without it the CA is trusted and downloadable but signs nothing."
        />
        {submit.error != null && <ErrorBox error={submit.error} />}
        <div className="dialog__footer ca-dialog-footer">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" busy={submit.busy} disabled={!name.trim() || !certificatePem.trim()}>Upload CA</Button>
        </div>
      </form>
    </Dialog>
  );
}

const renewFieldOf = (message: string, path?: readonly (string | number)[]) => {
  const named = path?.[0];
  if (named === "name" || named === "validityDays") return named;
  if (/^A CA certificate named /.test(message)) return "name";
  return null;
};

export function RenewCaDialog({ ca, onClose, onDone }: { ca: CaCertificate | null; onClose: () => void; onDone: (ca: CreatedCa) => Promise<void> }) {
  const [name, setName] = useState("");
  const [validity, setValidity] = useState("");
  const submit = useSubmit<CreatedCa>(renewFieldOf);
  useEffect(() => {
    if (!ca) return;
    setName("");
    setValidity("");
    submit.reset();
  }, [ca]); // eslint-disable-line react-hooks/exhaustive-deps
  const days = Number(validity);
  const validityProblem = validity === "" || (Number.isInteger(days) && days >= 1 && days <= MAX_VALIDITY_DAYS) ? undefined : `A whole number of days from 1 to ${MAX_VALIDITY_DAYS}`;
  const validityError = validityProblem ?? submit.fields.validityDays;

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    if (!ca || validityProblem) return;
    void submit.run(
      () => q.caCertificates.renew.call({ id: ca.id, ...(name.trim() ? { name: name.trim() } : {}), ...(validity ? { validityDays: days } : {}) }),
      onDone,
    );
  }

  return (
    <Dialog open={ca !== null} onClose={onClose} title={`Renew “${ca?.name ?? ""}”`}>
      <form className="stack" onSubmit={onSubmit} noValidate>
        <p>
          A new certificate with the same subject and key, a new serial number and validity. Certificates the old one issued keep verifying
          against it. {ca?.isDefault ? "The renewed CA becomes the default." : "The old one stays as it is."}
        </p>
        <Field id="renew-name" label={<>Name of the renewed CA <span className="faint">(optional)</span></>} error={submit.fields.name} hint="Default: the old name with “(renewed <date>)”.">
          <input id="renew-name" className="input" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} {...invalid("renew-name", submit.fields.name)} />
        </Field>
        <Field id="renew-validity" label={<>Validity (days) <span className="faint">(optional)</span></>} error={validityError} hint="Default: the lifetime of the CA being renewed.">
          <input id="renew-validity" className="input" type="number" min={1} max={MAX_VALIDITY_DAYS} value={validity} onChange={(e) => setValidity(e.target.value)} {...invalid("renew-validity", validityError)} />
        </Field>
        {submit.error != null && <ErrorBox error={submit.error} />}
        <div className="dialog__footer ca-dialog-footer">
          <Button onClick={onClose}>Cancel</Button>
          <Button type="submit" variant="primary" busy={submit.busy} disabled={!!validityProblem}>Renew CA</Button>
        </div>
      </form>
    </Dialog>
  );
}
