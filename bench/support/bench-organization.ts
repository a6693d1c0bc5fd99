// The set-up several benchmarks share: the service under test in its own process (serve.ts, on
// PGlite or BENCH_DATABASE_URL), an organization in it with an API key holding every
// permission, a generated CA and one enrollment token, and a `call` that throws on any answer
// that is not a success (a benchmark measures nothing of a failed set-up).
import { JsonClient } from "../../agent/src/core/json-client.js";
import { startChild, type Child } from "./child.js";

export interface BenchOrganization {
  service: Child;
  url: string;
  client: JsonClient;
  /** the organization's API key (every permission) */
  key: string;
  /** an enrollment token of the organization, with `tokenLabels` */
  enrollmentToken: string;
  call(key: string, method: string, path: string, body?: unknown): Promise<any>;
}

export async function startServiceWithOrganization(options: { adminKey: string; name: string; tokenLabels: Record<string, string> }): Promise<BenchOrganization> {
  const service = await startChild("serve.ts", {
    BENCH_ADMIN_KEY: options.adminKey, ...(process.env.BENCH_DATABASE_URL ? { BENCH_DATABASE: process.env.BENCH_DATABASE_URL } : {}),
  });
  const url = service.info.url as string;
  const client = new JsonClient(url, 8);
  async function call(key: string, method: string, path: string, body?: unknown) {
    const res = await client.request<any>(method, path, body, { "x-api-key": key });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }
  try {
    const org = await call(options.adminKey, "POST", "/api/v1/organizations", { name: options.name });
    const { key } = await call(options.adminKey, "POST", `/api/v1/organizations/${org.id}/api-keys`, { name: "bench", permissions: ["*"] });
    await call(key, "POST", "/api/v1/ca-certificates/generate", { name: "bench-ca", commonName: "Bench CA" });
    const token = await call(key, "POST", "/api/v1/enrollment-tokens", { name: "bench", labels: options.tokenLabels });
    return { service, url, client, key, enrollmentToken: token.token, call };
  } catch (error) {
    client.close();
    await service.stop();
    throw error;
  }
}
