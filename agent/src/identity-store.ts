// The enrolled identity, kept in the state directory: the device key (PKCS#8 PEM, 0600; for a
// TPM-held key only its TPM-wrapped blob, agent/src/tpm.ts), the certificate and CA chain, and
// identity.json. A renewal writes the new key and certificate
// under new names first and then switches identity.json to them, so a crash in between leaves
// the old, still valid, pair in use.
import { createPublicKey } from "node:crypto";
import type { DeviceKeys, HeldKey } from "./core/identity.js";
import type { TpmKeyBlob } from "./tpm.js";
import { subtle } from "./core/pki.js";
import { StateError, type StateDir } from "./state-dir.js";

export interface StoredIdentity {
  serviceUrl: string;
  deviceId: string;
  reportedDeviceId: string;
  name: string;
  certificateId: string | null;
  certificateNotAfter: string;
  heartbeatIntervalSeconds: number;
  /** file names in the state directory (they change at every renewal) */
  keyFile: string;
  /** "tpm": keyFile holds the TPM-wrapped blob of a key that never leaves the TPM (fleet-agent enroll --tpm) */
  keyKind?: "tpm";
  certificateFile: string;
  chainFile: string;
  enrolledAt: string;
}

const ECDSA_P256 = { name: "ECDSA", namedCurve: "P-256" } as const;

function pem(label: string, der: ArrayBuffer): string {
  const body = Buffer.from(der).toString("base64").replace(/.{1,64}/g, "$&\n");
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

/** Writes a key pair's private key (PKCS#8 PEM, 0600) under `name`; of a TPM-held key, its TPM-wrapped blob. */
export async function saveKey(state: StateDir, name: string, device: DeviceKeys | HeldKey): Promise<void> {
  if ("stored" in device) return state.writeJson(name, device.stored);
  if (device.algorithm !== "ES256") throw new Error("the agent keeps ECDSA P-256 keys only");
  state.writeText(name, pem("PRIVATE KEY", await subtle.exportKey("pkcs8", device.keys.privateKey)), 0o600);
}

export async function loadKey(state: StateDir, name: string): Promise<DeviceKeys> {
  const text = state.readText(name);
  if (text === null) throw new StateError(`${state.path(name)} is missing: the device key is gone; enroll again (fleet-agent enroll)`);
  try {
    const der = Buffer.from(text.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, ""), "base64");
    const privateKey = await subtle.importKey("pkcs8", der, ECDSA_P256, true, ["sign"]);
    const spki = createPublicKey({ key: text, format: "pem" }).export({ type: "spki", format: "der" });
    const publicKey = await subtle.importKey("spki", spki, ECDSA_P256, true, ["verify"]);
    return { algorithm: "ES256", keys: { privateKey, publicKey } };
  } catch {
    throw new StateError(`${state.path(name)} is not a readable ECDSA P-256 private key; restore it from a backup or enroll again`);
  }
}

/** The TPM-wrapped blob of a TPM-held key (usable only by the TPM that made it). */
export function loadTpmKeyBlob(state: StateDir, name: string): TpmKeyBlob {
  const blob = state.readJson<TpmKeyBlob>(name);
  if (!blob) throw new StateError(`${state.path(name)} is missing: the TPM-held key's blob is gone; enroll again (fleet-agent enroll --tpm)`);
  if (blob.kind !== "tpm" || typeof blob.public !== "string" || typeof blob.private !== "string") throw new StateError(`${state.path(name)} is not a TPM key blob; enroll again`);
  return blob;
}

export function loadIdentity(state: StateDir): StoredIdentity {
  const identity = state.readJson<StoredIdentity>("identity.json");
  if (!identity) throw new StateError(`this device is not enrolled (no ${state.path("identity.json")}): run fleet-agent enroll --url URL --token TOKEN`);
  for (const field of ["serviceUrl", "deviceId", "keyFile", "certificateFile", "certificateNotAfter"] as const) {
    if (typeof identity[field] !== "string" || !identity[field]) throw new StateError(`${state.path("identity.json")} is corrupted (no ${field}); restore it or enroll again`);
  }
  return identity;
}

/** Stores a new key and certificate (enrollment or renewal) and switches identity.json to them last. */
export async function storeCredentials(
  state: StateDir,
  base: Omit<StoredIdentity, "keyFile" | "certificateFile" | "chainFile">,
  keys: DeviceKeys | HeldKey,
  certificatePem: string,
  caChain: string[],
): Promise<StoredIdentity> {
  const stamp = Date.now().toString(36);
  const held = "stored" in keys;
  const identity: StoredIdentity = {
    ...base, keyFile: held ? `device-${stamp}.tpm.json` : `device-${stamp}.key`, ...(held ? { keyKind: "tpm" as const } : {}),
    certificateFile: `device-${stamp}.crt`, chainFile: `ca-chain-${stamp}.pem`,
  };
  await saveKey(state, identity.keyFile, keys);
  state.writeText(identity.certificateFile, certificatePem, 0o644);
  state.writeText(identity.chainFile, caChain.join(""), 0o644);
  const previous = state.readJson<StoredIdentity>("identity.json");
  state.writeJson("identity.json", identity);
  if (previous) for (const file of [previous.keyFile, previous.certificateFile, previous.chainFile]) if (file && !Object.values(identity).includes(file)) state.remove(file);
  return identity;
}

/**
 * The service said this device was decommissioned (deleted or rejected; docs/admission.md): the
 * key, the certificates and identity.json go, so that nothing on the machine can act as the
 * device again. identity.json first: a crash midway leaves a machine that is simply not enrolled.
 */
export function wipeIdentity(state: StateDir): void {
  const identity = state.readJson<Partial<StoredIdentity>>("identity.json");
  state.remove("identity.json");
  for (const file of [identity?.keyFile, identity?.certificateFile, identity?.chainFile]) if (file) state.remove(file);
}
