// Generate, upload and renew a CA. The PEM is judged by the service alone (its PKI checks are
// the rules): a refusal shows its message next to the field it is about (ca-facts.ts
// uploadFieldOf), anything else above the buttons, and the dialog stays open.
import { useEffect, useState, type ChangeEvent, type FormEvent, type ReactNode } from "react";
import type { RouterInputs, RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { useAction } from "../ui/useAction";
import { uploadFieldOf, type CaCertificate } from "./ca-facts";

type CreatedCa = RouterOutputs["caCertificates"]["generate"];
type KeyAlgorithm = NonNullable<RouterInputs["caCertificates"]["generate"]["keyAlgorithm"]>;

/** The API's key algorithms, in its order (checked against its type); the first is its default. */
const KEY_ALGORITHMS = ["ECDSA-P256", "RSA-2048", "RSA-4096"] as const satisfies readonly KeyAlgorithm[];
const DEFAULT_VALIDITY_DAYS = 3650;
const MAX_VALIDITY_DAYS = 36_500;

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
  const submit = useAction(q.caCertificates.generate.mutation(), { fieldOf: generateFieldOf, onSuccess: onDone });
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
  const validityError = (validity !== "" && validityProblem) || submit.fieldErrors.validityDays;

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    if (validityProblem || !name.trim() || !commonName.trim()) return;
    void submit.run({ name: name.trim(), commonName: commonName.trim(), validityDays: days, keyAlgorithm });
  }

  return (
    <Dialog open={open} onClose={onClose} title="Generate a certificate authority">
      <form className="stack" onSubmit={onSubmit} noValidate>
        <p className="muted">A self-signed root CA; its private key is generated and kept sealed by the service, never shown.</p>
        <Field id="ca-name" label="Name" error={submit.fieldErrors.name}>
          <input id="ca-name" className="input" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="Production root 2026" {...invalid("ca-name", submit.fieldErrors.name)} />
        </Field>
        <Field id="ca-common-name" label="Common name (CN)" error={submit.fieldErrors.commonName} hint="The subject of the certificate: devices' certificates name it as their issuer.">
          <input id="ca-common-name" className="input" maxLength={64} value={commonName} onChange={(e) => setCommonName(e.target.value)} placeholder="Acme Fleet Root CA" {...invalid("ca-common-name", submit.fieldErrors.commonName)} />
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
        <FormFooter action={submit} onCancel={onClose} className="dialog__footer ca-dialog-footer" disabled={!name.trim() || !commonName.trim() || !!validityProblem} submitLabel="Generate CA" />
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
  const submit = useAction(q.caCertificates.upload.mutation(), {
    fieldOf: uploadFieldOf,
    onSuccess: async (ca) => {
      setPrivateKeyPem(""); // the key leaves the page as soon as the service has it
      await onDone(ca);
    },
  });
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
    void submit.run({ name: name.trim(), certificatePem, ...(privateKeyPem.trim() ? { privateKeyPem } : {}) });
  }

  return (
    <Dialog open={open} onClose={onClose} title="Upload a certificate authority">
      <form className="stack" onSubmit={onSubmit} noValidate>
        <Field id="upload-name" label="Name" error={submit.fieldErrors.name}>
          <input id="upload-name" className="input" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="Corporate issuing CA" {...invalid("upload-name", submit.fieldErrors.name)} />
        </Field>
        <PemField
          id="upload-certificate"
          label="Certificate (PEM)"
          value={certificatePem}
          onChange={setCertificatePem}
          error={submit.fieldErrors.certificatePem}
          hint="The CA certificate, optionally followed by its issuers, nearest first."
        />
        <PemField
          id="upload-private-key"
          label="Private key (PEM)"
          optional
          value={privateKeyPem}
          onChange={setPrivateKeyPem}
          error={submit.fieldErrors.privateKeyPem}
          hint="Unencrypted PKCS#8, SEC1 or PKCS#1, stored sealed. Without it the CA is trusted and downloadable but signs nothing."
        />
        <FormFooter action={submit} onCancel={onClose} className="dialog__footer ca-dialog-footer" disabled={!name.trim() || !certificatePem.trim()} submitLabel="Upload CA" />
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
  const submit = useAction(q.caCertificates.renew.mutation(), { fieldOf: renewFieldOf, onSuccess: onDone });
  useEffect(() => {
    if (!ca) return;
    setName("");
    setValidity("");
    submit.reset();
  }, [ca]); // eslint-disable-line react-hooks/exhaustive-deps
  const days = Number(validity);
  const validityProblem = validity === "" || (Number.isInteger(days) && days >= 1 && days <= MAX_VALIDITY_DAYS) ? undefined : `A whole number of days from 1 to ${MAX_VALIDITY_DAYS}`;
  const validityError = validityProblem ?? submit.fieldErrors.validityDays;

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    if (!ca || validityProblem) return;
    void submit.run({ id: ca.id, ...(name.trim() ? { name: name.trim() } : {}), ...(validity ? { validityDays: days } : {}) });
  }

  return (
    <Dialog open={ca !== null} onClose={onClose} title={`Renew “${ca?.name ?? ""}”`}>
      <form className="stack" onSubmit={onSubmit} noValidate>
        <p>
          A new certificate with the same subject and key, a new serial number and validity. Certificates the old one issued keep verifying
          against it. {ca?.isDefault ? "The renewed CA becomes the default." : "The old one stays as it is."}
        </p>
        <Field id="renew-name" label={<>Name of the renewed CA <span className="faint">(optional)</span></>} error={submit.fieldErrors.name} hint="Default: the old name with “(renewed <date>)”.">
          <input id="renew-name" className="input" maxLength={100} value={name} onChange={(e) => setName(e.target.value)} {...invalid("renew-name", submit.fieldErrors.name)} />
        </Field>
        <Field id="renew-validity" label={<>Validity (days) <span className="faint">(optional)</span></>} error={validityError} hint="Default: the lifetime of the CA being renewed.">
          <input id="renew-validity" className="input" type="number" min={1} max={MAX_VALIDITY_DAYS} value={validity} onChange={(e) => setValidity(e.target.value)} {...invalid("renew-validity", validityError)} />
        </Field>
        <FormFooter action={submit} onCancel={onClose} className="dialog__footer ca-dialog-footer" disabled={!!validityProblem} submitLabel="Renew CA" />
      </form>
    </Dialog>
  );
}
