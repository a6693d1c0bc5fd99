// The root router. Its type is what TypeScript clients import (see src/index.ts).
import type { Meta } from "./init.js";
import { router } from "./procedures.js";
import { authRouter } from "../modules/auth/router.js";
import { organizationsRouter } from "../modules/organizations/router.js";
import { usersRouter } from "../modules/users/router.js";
import { membersRouter } from "../modules/members/router.js";
import { configRouter } from "../modules/config/router.js";
import { apiKeysRouter } from "../modules/api-keys/router.js";
import { rolesRouter } from "../modules/roles/router.js";
import { systemRolesRouter } from "../modules/system-roles/router.js";
import { invitationsRouter } from "../modules/invitations/router.js";
import { caCertificatesRouter } from "../modules/ca-certificates/router.js";
import { deviceCertificatesRouter } from "../modules/devices/certificates/router.js";
import { devicesRouter } from "../modules/devices/router.js";
import { groupsRouter } from "../modules/groups/router.js";
import { enrollmentTokensRouter } from "../modules/enrollment-tokens/router.js";
import { enrollmentRequestsRouter } from "../modules/enrollment-requests/router.js";
import { preauthorizedDevicesRouter } from "../modules/preauthorized-devices/router.js";
import { tpmEkCasRouter } from "../modules/tpm-ek-cas/router.js";
import { agentRouter } from "../modules/agent/router.js";
import { certificatesRouter } from "../modules/certificates/router.js";
import { registriesRouter } from "../modules/registries/router.js";
import { globalRegistriesRouter } from "../modules/global-registries/router.js";
import { applicationsRouter } from "../modules/applications/router.js";
import { deploymentsRouter } from "../modules/deployments/router.js";
import { rollbackRouter } from "../modules/deployments/rollback-router.js";
import { marketplaceRouter } from "../modules/marketplace/router.js";

import { telemetryIngestRouter, telemetryRouter } from "../modules/telemetry/router.js";
import { logsIngestRouter, logsRouter } from "../modules/logs/router.js";
import { realtimeRouter } from "../modules/realtime/router.js";
import { fleetRouter } from "../modules/fleet/router.js";
import { alertRulesRouter } from "../modules/alerts/router.js";
import { alertsRouter } from "../modules/alerts/alerts-router.js";
import { notificationTargetsRouter } from "../modules/notification-targets/router.js";
import { auditRouter } from "../modules/audit/router.js";
import { activityRouter } from "../modules/activity/router.js";
import { tenantRouter } from "../modules/tenant/router.js";
import { profileRouter } from "../modules/profile/router.js";
import { federationRouter } from "../modules/federation/router.js";
import { mailRouter } from "../modules/mail/router.js";
import { remoteSessionsRouter } from "../modules/remote-sessions/router.js";
import { deviceActionsRouter } from "../modules/device-actions/router.js";
import { jobsRouter } from "../modules/jobs/router.js";
import { configLayersRouter } from "../modules/config-layers/router.js";

export const appRouter = router({
  auth: authRouter,
  organizations: organizationsRouter,
  users: usersRouter,
  members: membersRouter,
  config: configRouter,
  apiKeys: apiKeysRouter,
  roles: rolesRouter,
  systemRoles: systemRolesRouter,
  invitations: invitationsRouter,
  caCertificates: caCertificatesRouter,
  deviceCertificates: deviceCertificatesRouter,
  devices: devicesRouter,
  groups: groupsRouter,
  enrollmentTokens: enrollmentTokensRouter,
  agent: agentRouter,
  enrollmentRequests: enrollmentRequestsRouter,
  preauthorizedDevices: preauthorizedDevicesRouter,
  tpmEkCas: tpmEkCasRouter,
  certificates: certificatesRouter,
  registries: registriesRouter,
  globalRegistries: globalRegistriesRouter,
  applications: applicationsRouter,
  deployments: deploymentsRouter,
  rollback: rollbackRouter,
  marketplaceStore: marketplaceRouter,
  telemetry: telemetryRouter,
  telemetryIngest: telemetryIngestRouter,
  logs: logsRouter,
  logsIngest: logsIngestRouter,
  realtime: realtimeRouter,
  fleet: fleetRouter,
  alertRules: alertRulesRouter,
  alerts: alertsRouter,
  notificationTargets: notificationTargetsRouter,
  audit: auditRouter,
  activity: activityRouter,
  tenant: tenantRouter,
  profile: profileRouter,
  federation: federationRouter,
  mail: mailRouter,
  remoteSessions: remoteSessionsRouter,
  deviceActions: deviceActionsRouter,
  configLayers: configLayersRouter,
  jobs: jobsRouter,
});

export type AppRouter = typeof appRouter;

/** Every procedure's path ("devices.get") with its meta, for what is derived from the metas. */
export function procedureMetas(router: AppRouter = appRouter): [string, Meta][] {
  return Object.entries(router._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>)
    .filter(([, procedure]) => procedure._def.meta)
    .map(([path, procedure]) => [path, procedure._def.meta!]);
}
