// The device agent protocol's payloads (docs/devices.md): enroll, heartbeat, renew.
import { z } from "zod";
import { offerOutput } from "../remote-sessions/schemas.js";
import { labelsSchema } from "../devices/labels.js";
import { actionReport, deviceActionEntry } from "../device-actions/schemas.js";
import { tpmEvidenceInput } from "../tpm-ek-cas/attestation.js";
import { configurationAnswer, configurationReport } from "../config-layers/schemas.js";
import { systemReport } from "../devices/system.js";

/** Facts the agent reports: the named ones become device columns, the rest are kept as given. */
export const KNOWN_FACTS = ["os", "arch", "agentVersion", "hardwareModel", "ipAddress"] as const;

// Keys start with a letter: rules out "__proto__" and friends before they reach any object.
const factKey = z.string().regex(/^[A-Za-z][A-Za-z0-9_.-]{0,99}$/, "fact names are 1-100 characters: a letter, then letters, digits, '_', '.', '-'");
const factValue = z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]);
export const factsSchema = z
  .record(factKey, factValue)
  .refine((v) => Object.keys(v).length <= 100, "at most 100 facts")
  .describe("os, arch, agentVersion, hardwareModel, ipAddress and any other flat facts");
export type Facts = z.infer<typeof factsSchema>;

export const reportedDeviceId = z
  .string()
  .min(1)
  .max(200)
  // eslint-disable-next-line no-control-regex
  .regex(/^[^\u0000-\u001f\u007f]+$/, "no control characters");

export const enrollInput = z.object({
  enrollmentToken: z.string().min(1).max(200),
  reportedDeviceId: reportedDeviceId.describe("the hardware identity (serial number, MAC, TPM EK hash ...); one claim per organization"),
  name: z.string().trim().min(1).max(200).optional().describe("defaults to reportedDeviceId"),
  csr: z.string().min(1).max(64 * 1024).describe("PKCS#10 certificate request (PEM) for the device's key: ECDSA P-256/P-384, Ed25519 or RSA >= 2048"),
  facts: factsSchema.optional(),
  labels: labelsSchema.optional().describe("labels the device asks for (fleet-agent enroll --label k=v); where the enrollment token's labels name the same key, the token's value wins"),
  tpm: tpmEvidenceInput.optional(),
});

export const enrollOutput = z.object({
  deviceId: z.string().uuid(),
  certificate: z.string().describe("the device certificate (PEM), subject CN=<deviceId>"),
  caChain: z.array(z.string()).describe("PEM certificates of the issuing CA, nearest first"),
  certificateId: z.string().uuid(),
  certificateNotAfter: z.string().datetime(),
  heartbeatIntervalSeconds: z.number().int(),
  admission: z.enum(["admitted", "pending"]).describe("pending: the device waits in the enrollment lobby; it heartbeats, but gets nothing until an operator approves it (docs/admission.md)"),
  attestation: z.enum(["tpm"]).nullable().describe("tpm: the service verified that the device's key is held by a TPM whose EK chains to a trusted EK CA"),
});

/** Device-side states of a deployment (domain.md). */
export const DEPLOYMENT_DEVICE_STATES = ["pending", "downloading", "installing", "running", "failed", "removing", "removed"] as const;

export const deploymentReport = z.object({
  deploymentId: z.string().uuid(),
  state: z.enum(DEPLOYMENT_DEVICE_STATES),
  message: z.string().max(2000).optional(),
  attempt: z.number().int().min(1).max(1000).optional().describe("the install attempt the report is about (the desired state's attempt); a report about an earlier attempt is ignored"),
  rolledBackTo: z.object({
    deploymentId: z.string().uuid().describe("the deployment that installed it (for an upgrade in place: this deployment's own id)"),
    version: z.string().min(1).max(256).describe("its version (SemVer: at most 256 characters)"),
  }).optional().describe("with failed: the release the device brought up again instead (device-side rollback); the service shows that version running on the device again"),
});

export const heartbeatInput = z.object({
  status: z.enum(["online", "error"]).default("online").describe("error: the agent reports a problem (the device is reachable)"),
  message: z.string().trim().max(500).optional()
    .describe("with status error: what is wrong, shown on the device's page and in its status-change activity (without it: the message of a deployment this heartbeat reports failed)"),
  facts: factsSchema.optional().describe("replaces the facts reported before (named facts are kept when omitted)"),
  deployments: z.array(deploymentReport).max(1000).optional().describe("progress of the deployments the device was given"),
  actions: z.array(actionReport).max(100).optional().describe("what became of the device actions it was handed (docs/actions.md)"),
  configuration: configurationReport.optional().describe("the configuration revision applied or failed, and files changed by hand (docs/configuration.md); sent when it changed and at least every 10th heartbeat"),
  system: systemReport.optional().describe("what the device's operating system booted and how its last system update ended (docs/os-updates.md); sent by an agent with RAUC"),
});

/** One entry of the desired state: what the device must install or remove. */
export const desiredDeployment = z.object({
  deploymentId: z.string().uuid(),
  action: z.enum(["install", "remove"]),
  attempt: z.number().int().describe("the install attempt (1 = the first); a higher one than the device last worked on means: install again (automatic retry)"),
  window: z
    .enum(["open", "download-only", "closed"])
    .describe("maintenance window: open: install (or remove) now; download-only: fetch what the install needs, do not install; closed: do nothing yet"),
  nextWindowAt: z.string().nullable().describe("when not open: the start of the next maintenance window"),
  applicationId: z.string(),
  version: z.string(),
  profile: z.object({ id: z.string(), type: z.string(), components: z.unknown() }),
  parameters: z.record(z.string(), z.unknown()),
  parametersHash: z.string().optional().describe("sha256 of the rendered parameters when they take the device's variables ({{ vars.NAME }}): a new hash means re-create in place"),
  systemImage: z.object({
    component: z.string().describe("the profile's system-image component"),
    url: z.string().nullable().describe("where the agent downloads the RAUC bundle (the component's https:// repository); null: an oci:// bundle, fetched from the service (bundlePath)"),
    bundlePath: z.string().optional().describe("an oci:// bundle: the service's path that relays it to this device (GET with the device token; Range requests resume a download)"),
    repository: z.string().describe("the component's repository as the manifest says it"),
    digest: z.string().describe("sha256:<hex> of the bundle: checked after the download, and the digest the device must report booted"),
    version: z.string().describe("the component's revision"),
  }).optional().describe("with install, when the profile has a system-image component: the OS update the agent installs first (docs/os-updates.md); the deployment runs on the device once it booted that image and committed it"),
});
export type DesiredDeployment = z.infer<typeof desiredDeployment>;

export const heartbeatOutput = z.object({
  heartbeatIntervalSeconds: z.number().int(),
  deployments: z.array(desiredDeployment).describe("the desired state: deployments this device must run or remove"),
  actions: z.array(deviceActionEntry).optional().describe("the device actions open for it, oldest first (absent: none); each runs at most once (docs/actions.md)"),
  remoteAccess: z.object({
    enabled: z.boolean().describe("the organization's policy allows reaching this device: hold GET /agent/remote/wait (the agent's own configuration may still say no)"),
    pending: z.array(offerOutput).describe("streams waiting for this device (the fallback of the long-poll)"),
  }).optional().describe("remote access (docs/remote-access.md); absent: off for the organization"),
  configuration: configurationAnswer.optional().describe("the device's configuration revision, in full when it has not applied it (docs/configuration.md); absent: none"),
});

export const renewInput = z.object({
  csr: z.string().min(1).max(64 * 1024).describe("PKCS#10 request (PEM) for the key the new certificate certifies (a new key is recommended)"),
  tpm: tpmEvidenceInput.optional().describe("required for a device enrolled with a TPM-held key: the new key's attestation, from the same TPM"),
});

export const renewOutput = z.object({
  certificate: z.string(),
  caChain: z.array(z.string()),
  certificateId: z.string().uuid(),
  certificateNotAfter: z.string().datetime(),
});

/** Splits reported facts into the named columns and the free-form rest. */
export function splitFacts(facts: Facts | undefined) {
  const named: Partial<Record<(typeof KNOWN_FACTS)[number], string>> = {};
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(facts ?? {})) {
    if ((KNOWN_FACTS as readonly string[]).includes(key)) {
      if (value !== null && value !== undefined) named[key as (typeof KNOWN_FACTS)[number]] = String(value).slice(0, 500);
    } else {
      rest[key] = value;
    }
  }
  return { named, rest };
}
