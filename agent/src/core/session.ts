// A device's conversation with the service (docs/devices.md, "The agent protocol"): enrollment
// with a CSR for a key made on the device, short-lived tokens signed with that key, the
// heartbeat that reports deployment progress and answers the desired state, telemetry and log
// batches, and certificate renewal. The real agent (agent/src/agent.ts) and every simulated
// device (src/simulator/virtual-device.ts) speak through this one class.
//
// Enrollment, renewal, a component's package and the telemetry and log batches go through the
// typed tRPC client on the service's router type (service-client.ts: checked against the
// router when compiled, erased from what runs). The heartbeat keeps its lean REST route,
// POST /api/v1/agent/heartbeat: the service answers it on a route of its own, ahead of the REST
// facade and tRPC, that verifies the token and takes the device's heartbeat into a group commit
// (src/modules/agent/heartbeat-route.ts); it is the call every device makes every interval, and
// the one the service is sized by. Every device call carries a per-request device token, on
// either path.
import type { DeploymentAgent, DeploymentReport, DesiredDeploymentEntry } from "./deployments.js";
import {
  createCsr, createCsrWithHeldKey, generateDeviceKeys, signDeviceToken, signDeviceTokenWithHeldKey, x5tS256,
  type DeviceKeyAlgorithm, type DeviceKeys, type HeldKey, type TpmAttester, type TpmEvidence,
} from "./identity.js";
import type { JsonClient, JsonResponse } from "./json-client.js";
import { ServiceClient, type ServiceInputs, type ServiceOutputs } from "./service-client.js";
import type { RemoteAccessAnswer } from "../remote/remote-access.js";

/** Whether the service took the call (2xx: tRPC answers 200, the REST routes 200 or 201). */
export function succeeded(res: { status: number }): boolean {
  return res.status >= 200 && res.status < 300;
}

export type EnrollAnswer = ServiceOutputs["agent"]["enroll"];
/** The lean REST route's answer (the agent.heartbeat procedure's output, as the deployment state machine reads it). */
export interface HeartbeatAnswer {
  heartbeatIntervalSeconds: number;
  deployments: DesiredDeploymentEntry[];
  /** remote access: the organization's policy for this device and the sessions waiting for it (docs/remote-access.md) */
  remoteAccess?: RemoteAccessAnswer;
  /** device actions open for this device (absent: none; docs/actions.md) */
  actions?: unknown[];
  /** the device's configuration revision (absent: none for it; docs/configuration.md) */
  configuration?: unknown;
}

/** The configuration's side of a heartbeat (the real agent's agent/src/config/configuration.ts). */
export interface ConfigurationExchange {
  /** the report due with this heartbeat, if any */
  pendingReport(): object | undefined;
  acknowledge(report: never): void;
  /** the answer's configuration (absent: undefined); the work is not awaited */
  apply(answer: unknown): void;
}

/** The device actions' side of a heartbeat (the real agent's agent/src/actions/runner.ts). */
export interface ActionExchange {
  pendingReports(): unknown[];
  acknowledge(reports: never[]): void;
  apply(entries: never[]): void;
}
export type RenewAnswer = ServiceOutputs["agent"]["renewCertificate"];
export type ComponentPackage = ServiceOutputs["agent"]["componentPackage"];
export type IngestAnswer = ServiceOutputs["telemetryIngest"]["ingest"];

export interface EnrollRequest {
  enrollmentToken: string;
  reportedDeviceId: string;
  name?: string;
  labels?: Record<string, string>;
  facts?: Record<string, string | number | boolean | null>;
}

/** The heartbeat's `system` (the service's src/modules/devices/system.ts). */
export interface SystemReport {
  bootedSlot: string;
  booted: { version?: string | null; digest?: string | null; imageDigest?: string | null };
  other?: { slot: string; version?: string | null; digest?: string | null; imageDigest?: string | null } | null;
  lastUpdate?: {
    digest: string; fromVersion?: string | null; toVersion?: string | null; fromSlot?: string | null; toSlot?: string | null;
    outcome: "committed" | "rolled-back" | "failed"; reason?: string | null; startedAt: string; finishedAt: string;
  } | null;
}

export interface HeartbeatBody {
  status: "online" | "error";
  message?: string;
  facts?: Record<string, string | number | boolean | null>;
  /** what the operating system booted and how its last update ended (a device with RAUC; docs/os-updates.md) */
  system?: SystemReport;
}

const TOKEN_LIFETIME_SECONDS = 300;
/** a token is reused until this close to its expiry (signing per request would be wasteful) */
const TOKEN_REFRESH_MARGIN_SECONDS = 60;

/** The service refused the TPM's keys at the challenge (agent.tpmChallenge): the status and its reason. */
export class TpmChallengeRefused extends Error {
  constructor(readonly status: number, reason: string) {
    super(`the service refused the TPM's keys (${status}): ${reason}`);
  }
}

export class DeviceSession {
  keys!: DeviceKeys;
  /**
   * The TPM, when the device's key is held by one (fleet-agent enroll --tpm): enrollment and
   * renewal make the new key there and send its evidence, and `heldKey` signs every token.
   */
  tpm: TpmAttester | null = null;
  heldKey: HeldKey | null = null;
  deviceId: string | null = null;
  certificatePem: string | null = null;
  certificateNotAfter: Date | null = null;
  /** PEM certificates of the issuing CA, nearest first (as the service last gave them) */
  caChain: string[] = [];
  private x5t = "";
  private token: { value: string; expiresAt: number } | null = null;
  /** the typed tRPC client, over `client`'s connections */
  protected readonly service: ServiceClient;

  constructor(
    protected readonly client: JsonClient,
    protected readonly algorithm: DeviceKeyAlgorithm = "ES256",
  ) {
    this.service = new ServiceClient(client);
  }

  /** Enrolls with a key made here (agent.enroll); once taken, the session holds the device's identity. */
  async enrollWith(request: EnrollRequest): Promise<JsonResponse<EnrollAnswer>> {
    if (this.tpm) {
      const { key, evidence, csr } = await this.attestedKey(request.reportedDeviceId);
      const res = await this.service.answer(() => this.service.trpc.agent.enroll.mutate({ ...request, csr, tpm: evidence }));
      if (succeeded(res)) {
        this.heldKey = key;
        this.caChain = res.body.caChain ?? [];
        this.adoptCertificate(res.body.deviceId, res.body.certificate, res.body.certificateNotAfter);
      }
      return res;
    }
    this.keys = await generateDeviceKeys(this.algorithm);
    const csr = await createCsr(this.keys, request.reportedDeviceId);
    const res = await this.service.answer(() => this.service.trpc.agent.enroll.mutate({ ...request, csr }));
    if (succeeded(res)) {
      this.caChain = res.body.caChain ?? [];
      this.adoptCertificate(res.body.deviceId, res.body.certificate, res.body.certificateNotAfter);
    }
    return res;
  }

  /** A new key made in the TPM, its evidence (answering the service's challenge) and a CSR it signed. */
  private async attestedKey(commonName: string): Promise<{ key: HeldKey; evidence: TpmEvidence; csr: string }> {
    const { key, evidence } = await this.tpm!.attestNewKey(async (input) => {
      const res = await this.service.answer(() => this.service.trpc.agent.tpmChallenge.mutate(input));
      if (!succeeded(res)) throw new TpmChallengeRefused(res.status, (res.body as { message?: string })?.message ?? `HTTP ${res.status}`);
      return res.body;
    });
    return { key, evidence, csr: await createCsrWithHeldKey(key, commonName) };
  }

  /** The key tokens are signed with: the TPM's, or the software key. */
  get currentKey(): DeviceKeys | HeldKey {
    return this.heldKey ?? this.keys;
  }

  /** Picks up an identity held elsewhere (the agent's state directory, a benchmark's other process). */
  adoptCertificate(deviceId: string, certificatePem: string, notAfter: string) {
    this.deviceId = deviceId;
    this.certificatePem = certificatePem;
    this.certificateNotAfter = new Date(notAfter);
    this.x5t = x5tS256(certificatePem);
    this.token = null;
  }

  async authorization(): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    if (!this.token || this.token.expiresAt - now < TOKEN_REFRESH_MARGIN_SECONDS) {
      if (!this.deviceId) throw new Error("device is not enrolled");
      const claims = { deviceId: this.deviceId, x5t: this.x5t, lifetimeSeconds: TOKEN_LIFETIME_SECONDS };
      const value = this.heldKey ? await signDeviceTokenWithHeldKey(this.heldKey, claims) : await signDeviceToken(this.keys, claims);
      this.token = { value, expiresAt: now + TOKEN_LIFETIME_SECONDS };
    }
    return `Bearer ${this.token.value}`;
  }

  /** A device-authenticated request to a REST path (the heartbeat's lean route). */
  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<JsonResponse<T>> {
    return this.client.request<T>(method, path, body, { authorization: await this.authorization() });
  }

  /** A batch of telemetry snapshots (telemetryIngest.ingest); 2xx once stored, 429/503 with Retry-After when busy. */
  async sendTelemetryBatch(snapshots: ServiceInputs["telemetryIngest"]["ingest"]["snapshots"]): Promise<JsonResponse<IngestAnswer>> {
    const call = ServiceClient.as(await this.authorization());
    return this.service.answer(() => this.service.trpc.telemetryIngest.ingest.mutate({ snapshots }, call));
  }

  /** A batch of log lines (logsIngest.ingest); 2xx once stored, 429/503 with Retry-After when busy. */
  async sendLogBatch(entries: ServiceInputs["logsIngest"]["ingest"]["entries"]): Promise<JsonResponse<IngestAnswer>> {
    const call = ServiceClient.as(await this.authorization());
    return this.service.answer(() => this.service.trpc.logsIngest.ingest.mutate({ entries }, call));
  }

  /** The compose file of one component of a deployment this device runs (agent.componentPackage). */
  async componentPackage(deploymentId: string, component: string): Promise<JsonResponse<ComponentPackage>> {
    const call = ServiceClient.as(await this.authorization());
    return this.service.answer(() => this.service.trpc.agent.componentPackage.query({ deploymentId, component }, call));
  }

  /**
   * One heartbeat: status (and facts), plus the deployment states the service has not
   * acknowledged yet. On success those are acknowledged and the desired state answered is
   * obeyed; on failure they are sent again next time.
   */
  async exchangeHeartbeat(deployments: DeploymentAgent, body: HeartbeatBody, actions?: ActionExchange, configuration?: ConfigurationExchange): Promise<{ response: JsonResponse<HeartbeatAnswer>; reported: DeploymentReport[] }> {
    const reports = deployments.pendingReports();
    const actionReports = actions?.pendingReports() ?? [];
    const configReport = configuration?.pendingReport();
    const response = await this.call<HeartbeatAnswer>("POST", "/api/v1/agent/heartbeat", {
      ...body, ...(reports.length ? { deployments: reports } : {}), ...(actionReports.length ? { actions: actionReports } : {}),
      ...(configReport ? { configuration: configReport } : {}),
    });
    if (response.status === 200) {
      deployments.acknowledge(reports);
      if (Array.isArray(response.body?.deployments)) deployments.apply(response.body.deployments);
      actions?.acknowledge(actionReports as never[]);
      actions?.apply((Array.isArray(response.body?.actions) ? response.body.actions : []) as never[]);
      configuration?.acknowledge(configReport as never);
      configuration?.apply(response.body?.configuration);
    }
    return { response, reported: reports };
  }

  /** A device action's diagnostics bundle (tar.gz), as the plain route takes it: 201 once stored. */
  async uploadActionBundle(actionId: string, data: Uint8Array): Promise<JsonResponse> {
    return this.client.upload("POST", `/api/v1/agent/actions/${actionId}/bundle`, Buffer.from(data), "application/gzip", { authorization: await this.authorization() });
  }

  /** Closes the kept-alive connections. */
  close() {
    this.client.close();
  }

  /** A new key and certificate, authenticated with the current one (agent.renewCertificate); the session moves to them once taken. */
  async renewCertificate(commonName: string): Promise<JsonResponse<RenewAnswer>> {
    const call = ServiceClient.as(await this.authorization());
    if (this.tpm) {
      // re-attested: a new key in the same TPM, with fresh evidence
      const { key, evidence, csr } = await this.attestedKey(commonName);
      const res = await this.service.answer(() => this.service.trpc.agent.renewCertificate.mutate({ csr, tpm: evidence }, call));
      if (succeeded(res) && this.deviceId) {
        this.heldKey = key;
        this.caChain = res.body.caChain ?? this.caChain;
        this.adoptCertificate(this.deviceId, res.body.certificate, res.body.certificateNotAfter);
      }
      return res;
    }
    const next = await generateDeviceKeys(this.algorithm);
    const csr = await createCsr(next, commonName);
    const res = await this.service.answer(() => this.service.trpc.agent.renewCertificate.mutate({ csr }, call));
    if (succeeded(res) && this.deviceId) {
      this.keys = next;
      this.caChain = res.body.caChain ?? this.caChain;
      this.adoptCertificate(this.deviceId, res.body.certificate, res.body.certificateNotAfter);
    }
    return res;
  }
}
