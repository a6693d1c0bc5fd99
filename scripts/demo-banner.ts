// What `npm run demo` prints once its fleet is live (scripts/demo.ts): where to look, the web
// console first with whom to sign in, then the API. A pure function, so that a unit test
// checks the printout without starting the demo (which takes a while: a service, a Git
// registry, 50 enrolling devices). What the simulated devices do on purpose: demo-plan.ts.
import { BROKEN_BUILD, FAILING_DEVICE } from "./demo-plan.js";

export interface DemoBannerFacts {
  /** the service's base URL, e.g. http://127.0.0.1:3000 */
  base: string;
  operator: { email: string; password: string };
  organizationSlug: string;
  enrolledDevices: number;
  /** devices that enroll after the banner (they join the continuous deployment late) */
  lateDevices?: number;
  superAdmin: { email: string | undefined; password: string | null | undefined; apiKey: string | null | undefined };
  demoApiKey: string;
  enrollmentToken: string;
  gitRegistry: { url: string; id: string } | null;
  /** a device to show a telemetry call for, if one enrolled */
  deviceId: string | null;
  /** the demo's continuous deployment, which devices enrolled later get too */
  continuousDeployment?: { id: string; name: string } | null;
}

export function demoBanner(f: DemoBannerFacts): string {
  const { base } = f;
  const operator = `${f.operator.email} / ${f.operator.password}`;
  const late = f.lateDevices ?? 0;
  const devices = late ? `${f.enrolledDevices + late} devices (${f.enrolledDevices} now, ${late} more in a minute)` : `${f.enrolledDevices} live devices`;
  return `
================================================================================
 Fleet Manager demo is running: ${base}
================================================================================
 Web console             ${base}/
                         sign in as ${operator}
                         (organization '${f.organizationSlug}', role operator, ${devices};
                         Devices, Groups, Enrollment in the navigation, a device's Telemetry and Logs tabs)
 API docs (Swagger UI)   ${base}/api/v1/docs
 OpenAPI document        ${base}/api/v1/openapi.json
 Super Admin             ${f.superAdmin.email} / ${f.superAdmin.password}
                         API key ${f.superAdmin.apiKey}
 Demo organization       '${f.organizationSlug}', operator ${operator}
 Demo API key            ${f.demoApiKey}  (the operator's permissions)
 Enrollment token        ${f.enrollmentToken}
 Git registry            ${f.gitRegistry ? `${f.gitRegistry.url}  (served by this process)
                         id ${f.gitRegistry.id}` : "none (git not available)"}

 Try:
   export KEY=${f.demoApiKey}
   curl -s -H "X-API-Key: $KEY" ${base}/api/v1/fleet/health
   curl -s -H "X-API-Key: $KEY" '${base}/api/v1/devices?limit=3'
   curl -s -H "X-API-Key: $KEY" ${base}/api/v1/applications
${f.gitRegistry ? `   curl -s -H "X-API-Key: $KEY" -X POST ${base}/api/v1/registries/git/${f.gitRegistry.id}/sync\n` : ""}   curl -s -H "X-API-Key: $KEY" '${base}/api/v1/audit?limit=5'${f.deviceId ? `
   curl -s -H "X-API-Key: $KEY" ${base}/api/v1/devices/${f.deviceId}/telemetry/latest` : ""}
${f.continuousDeployment ? ` Continuous deployment   '${f.continuousDeployment.name}' (telemetry-forwarder): devices enrolled later get it too
   curl -s -H "X-API-Key: $KEY" ${base}/api/v1/deployments/${f.continuousDeployment.id}
` : ""} On purpose (the same at every run): ${FAILING_DEVICE} reports errors all along; ${BROKEN_BUILD.application} ${BROKEN_BUILD.version}
 is a broken build every device fails to install (its staged rollout pauses by itself); nothing else fails.
 More devices against the same service (another terminal):
   npm run simulate -- --url ${base} --token ${f.enrollmentToken} --devices 20 --prefix more
 Ctrl-C stops everything.
================================================================================`;
}
