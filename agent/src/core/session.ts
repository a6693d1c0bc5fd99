// A device's conversation with the service (docs/devices.md, "The agent protocol"): enrollment
// with a CSR for a key made on the device, short-lived tokens signed with that key, the
// heartbeat that reports deployment progress and answers the desired state, telemetry and log
// batches, and certificate renewal. The real agent (agent/src/agent.ts) and every simulated
// device (src/simulator/virtual-device.ts) speak through this one class.
//
// It calls the REST paths with a lean JSON client rather than the typed tRPC client: the
// heartbeat has a lean route of its own on the service, every call carries a per-request device
// token, and the device's bundle stays free of the service's client libraries.
import type { DeploymentAgent, DeploymentReport, DesiredDeploymentEntry } from "./deployments.js";
import { createCsr, generateDeviceKeys, signDeviceToken, x5tS256, type DeviceKeyAlgorithm, type DeviceKeys } from "./identity.js";
import type { JsonClient, JsonResponse } from "./json-client.js";

export interface EnrollAnswer {
  deviceId: string;
  certificate: string;
  caChain: string[];
  certificateId?: string;
  certificateNotAfter: string;
  heartbeatIntervalSeconds: number;
}

export interface HeartbeatAnswer {
  heartbeatIntervalSeconds: number;
  deployments: DesiredDeploymentEntry[];
}

export interface RenewAnswer {
  certificate: string;
  caChain: string[];
  certificateId: string;
  certificateNotAfter: string;
}

export interface EnrollRequest {
  enrollmentToken: string;
  reportedDeviceId: string;
  name?: string;
  labels?: Record<string, string>;
  facts?: Record<string, string | number | boolean | null>;
}

export interface HeartbeatBody {
  status: "online" | "error";
  message?: string;
  facts?: Record<string, string | number | boolean | null>;
}

const TOKEN_LIFETIME_SECONDS = 300;
/** a token is reused until this close to its expiry (signing per request would be wasteful) */
const TOKEN_REFRESH_MARGIN_SECONDS = 60;

export class DeviceSession {
  keys!: DeviceKeys;
  deviceId: string | null = null;
  certificatePem: string | null = null;
  certificateNotAfter: Date | null = null;
  /** PEM certificates of the issuing CA, nearest first (as the service last gave them) */
  caChain: string[] = [];
  private x5t = "";
  private token: { value: string; expiresAt: number } | null = null;

  constructor(
    protected readonly client: JsonClient,
    protected readonly algorithm: DeviceKeyAlgorithm = "ES256",
  ) {}

  /** Enrolls with a key made here; on 201 the session holds the device's identity. */
  async enrollWith(request: EnrollRequest): Promise<JsonResponse<EnrollAnswer>> {
    this.keys = await generateDeviceKeys(this.algorithm);
    const csr = await createCsr(this.keys, request.reportedDeviceId);
    const res = await this.client.request<EnrollAnswer>("POST", "/api/v1/agent/enroll", { ...request, csr });
    if (res.status === 201) {
      this.caChain = res.body.caChain ?? [];
      this.adoptCertificate(res.body.deviceId, res.body.certificate, res.body.certificateNotAfter);
    }
    return res;
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
      const value = await signDeviceToken(this.keys, { deviceId: this.deviceId, x5t: this.x5t, lifetimeSeconds: TOKEN_LIFETIME_SECONDS });
      this.token = { value, expiresAt: now + TOKEN_LIFETIME_SECONDS };
    }
    return `Bearer ${this.token.value}`;
  }

  /** A device-authenticated request. */
  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<JsonResponse<T>> {
    return this.client.request<T>(method, path, body, { authorization: await this.authorization() });
  }

  /**
   * One heartbeat: status (and facts), plus the deployment states the service has not
   * acknowledged yet. On success those are acknowledged and the desired state answered is
   * obeyed; on failure they are sent again next time.
   */
  async exchangeHeartbeat(deployments: DeploymentAgent, body: HeartbeatBody): Promise<{ response: JsonResponse<HeartbeatAnswer>; reported: DeploymentReport[] }> {
    const reports = deployments.pendingReports();
    const response = await this.call<HeartbeatAnswer>("POST", "/api/v1/agent/heartbeat", { ...body, ...(reports.length ? { deployments: reports } : {}) });
    if (response.status === 200) {
      deployments.acknowledge(reports);
      if (Array.isArray(response.body?.deployments)) deployments.apply(response.body.deployments);
    }
    return { response, reported: reports };
  }

  /** Closes the kept-alive connections. */
  close() {
    this.client.close();
  }

  /** A new key and certificate, authenticated with the current one; the session moves to them on 201. */
  async renewCertificate(commonName: string): Promise<JsonResponse<RenewAnswer>> {
    const authorization = await this.authorization();
    const next = await generateDeviceKeys(this.algorithm);
    const csr = await createCsr(next, commonName);
    const res = await this.client.request<RenewAnswer>("POST", "/api/v1/agent/certificate/renew", { csr }, { authorization });
    if (res.status === 201 && this.deviceId) {
      this.keys = next;
      this.caChain = res.body.caChain ?? this.caChain;
      this.adoptCertificate(this.deviceId, res.body.certificate, res.body.certificateNotAfter);
    }
    return res;
  }
}
