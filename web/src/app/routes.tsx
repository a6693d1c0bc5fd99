// Every console path, its search parameters (validated, so a shared link with a bad value
// still opens) and its page, loaded on first visit (each area is its own chunk). The signed-in
// area loads the session first: a 401 there, or anywhere later, leads to sign-in and back.
import { createRootRouteWithContext, createRoute, createRouter, lazyRouteComponent, Outlet, redirect, Link } from "@tanstack/react-router";
import type { QueryClient } from "@tanstack/react-query";
import * as z from "zod/mini";
import { statusOf } from "../api/client";
import { deviceDetailSearch, deviceListSearch } from "../devices/search";
import { groupsSearch } from "../groups/search";
import { rolloutSearch } from "../deployments/rollout/search";
import { applicationsSearch } from "../applications/search";
import { deploymentListSearch, deploymentNewSearch } from "../deployments/search";
import { certificatesSearch } from "../certificates/search";
import { alertListSearch } from "../alerts/search";
import { auditSearch } from "../audit/search";
import { activitySearch } from "../activity/search";
import { usersSearch } from "../users/search";
import { organizationsSearch } from "../organizations/search";
import { queryClient, setSessionEndedHandler } from "./query-client";
import { forgetSignedIn, mayBeSignedIn, sessionQuery } from "./session";
import { Shell } from "./Shell";
import { Loading } from "../ui/states";
import { Compass } from "lucide-react";
import "./shell.css";

const rootRoute = createRootRouteWithContext<{ queryClient: QueryClient }>()({
  component: Outlet,
  notFoundComponent: NotFound,
});

/** A path that is no console page: a page of its own (with its h1), and the way to the overview. */
function NotFound() {
  return (
    <main id="main" className="state not-found">
      <Compass aria-hidden="true" />
      <h1>This page does not exist</h1>
      <p>The address may be mistyped, or the page was moved.</p>
      <Link to="/">Go to the overview</Link>
    </main>
  );
}

/** A path inside the console to return to after sign-in; anything else (another site) is ignored. */
export function safeNext(next: string | undefined): string {
  return next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/sign-in") ? next : "/";
}

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: "/sign-in",
  // error: why a sign-in through the identity provider came back refused (a code, shown as a sentence)
  validateSearch: z.object({ next: z.optional(z.string()), reason: z.optional(z.enum(["expired"])), error: z.optional(z.string()) }),
  component: lazyRouteComponent(() => import("../auth/SignInPage"), "SignInPage"),
});

// The page an invitation link opens (invitations/InvitationsPage.tsx builds it): public, since
// the person invited has no account yet; accepting signs them in.
const acceptInvitationRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: "/invitations/$token",
  component: lazyRouteComponent(() => import("../invitations/AcceptInvitationPage"), "AcceptInvitationPage"),
});

const appRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: "app",
  beforeLoad: async ({ context, location, matches }) => {
    // The page's code loads while the session is read, not after it: a cold start saves a
    // round trip (the router fetches a route's chunk only once every beforeLoad is done).
    for (const match of matches) void router.loadRouteChunk(router.routesById[match.routeId])?.catch(() => undefined);
    const known = context.queryClient.getQueryData(sessionQuery().queryKey) !== undefined;
    if (!known && !mayBeSignedIn()) throw redirect({ to: "/sign-in", search: { next: location.href } });
    try {
      await context.queryClient.ensureQueryData(sessionQuery());
    } catch (err) {
      if (statusOf(err) === 401) {
        forgetSignedIn();
        throw redirect({ to: "/sign-in", search: { next: location.href } });
      }
      throw err;
    }
  },
  component: Shell,
});

const overviewRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/",
  component: lazyRouteComponent(() => import("../fleet/OverviewPage"), "OverviewPage"),
});

const devicesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/devices",
  validateSearch: deviceListSearch,
  component: lazyRouteComponent(() => import("../devices/DevicesPage"), "DevicesPage"),
});




const deviceRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/devices/$deviceId",
  validateSearch: deviceDetailSearch,
  component: lazyRouteComponent(() => import("../devices/DevicePage"), "DevicePage"),
});

// One deployment and its rollout, live (deployments/rollout/); the list links each row here.
const deploymentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/deployments/$deploymentId",
  validateSearch: rolloutSearch,
  component: lazyRouteComponent(() => import("../deployments/rollout/RolloutPage"), "RolloutPage"),
});

const groupsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/groups",
  validateSearch: groupsSearch,
  component: lazyRouteComponent(() => import("../groups/GroupsPage"), "GroupsPage"),
});

// The enrollment lobby (docs/admission.md): devices awaiting approval.
const enrollmentRequestsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/enrollment-requests",
  component: lazyRouteComponent(() => import("../enrollment-requests/LobbyPage"), "LobbyPage"),
});

const enrollmentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/enrollment-tokens",
  component: lazyRouteComponent(() => import("../enrollment-tokens/EnrollmentTokensPage"), "EnrollmentTokensPage"),
});

const applicationsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/applications",
  validateSearch: applicationsSearch,
  component: lazyRouteComponent(() => import("../applications/ApplicationsPage"), "ApplicationsPage"),
});

const applicationRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/applications/$applicationId",
  component: lazyRouteComponent(() => import("../applications/ApplicationPage"), "ApplicationPage"),
});

const registriesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/registries",
  component: lazyRouteComponent(() => import("../registries/RegistriesPage"), "RegistriesPage"),
});

const marketplaceRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/marketplace",
  component: lazyRouteComponent(() => import("../marketplace/MarketplacePage"), "MarketplacePage"),
});

// Jobs (jobs/): one device action over the devices of a label selector, in batches.
const jobsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/jobs",
  component: lazyRouteComponent(() => import("../jobs/JobsPage"), "JobsPage"),
});

const jobRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/jobs/$jobId",
  component: lazyRouteComponent(() => import("../jobs/JobPage"), "JobPage"),
});

const deploymentsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/deployments",
  validateSearch: deploymentListSearch,
  component: lazyRouteComponent(() => import("../deployments/DeploymentsPage"), "DeploymentsPage"),
});

const newDeploymentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/deployments/new",
  validateSearch: deploymentNewSearch,
  component: lazyRouteComponent(() => import("../deployments/DeploymentFormPage"), "NewDeploymentPage"),
});

const editDeploymentRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/deployments/$deploymentId/edit",
  component: lazyRouteComponent(() => import("../deployments/DeploymentFormPage"), "EditDeploymentPage"),
});

// Configuration (config/): fleet as code, the config sources, their plan, sync and history.
const configRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/config",
  component: lazyRouteComponent(() => import("../config/ConfigPage"), "ConfigPage"),
});

const configSourceRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/config/sources/$sourceId",
  component: lazyRouteComponent(() => import("../config/SourcePage"), "SourcePage"),
});

// Device configuration (config-layers/): layers of variables, files and secrets, their
// revisions, and the effective configuration of a device (also the device page's tab).
const configLayersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/config-layers",
  component: lazyRouteComponent(() => import("../config-layers/LayersPage"), "LayersPage"),
});

const configLayerRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/config-layers/$layerId",
  component: lazyRouteComponent(() => import("../config-layers/LayerPage"), "LayerPage"),
});

const certificatesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/certificates",
  validateSearch: certificatesSearch,
  component: lazyRouteComponent(() => import("../certificates/CertificatesPage"), "CertificatesPage"),
});

// Alerts (alerts/): what fires and what resolved, the rules, and where notifications go.
const alertsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/alerts",
  validateSearch: alertListSearch,
  component: lazyRouteComponent(() => import("../alerts/AlertsPage"), "AlertsPage"),
});

const alertRulesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/alerts/rules",
  component: lazyRouteComponent(() => import("../alerts/RulesPage"), "RulesPage"),
});

const newAlertRuleRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/alerts/rules/new",
  component: lazyRouteComponent(() => import("../alerts/RuleFormPage"), "NewRulePage"),
});

const editAlertRuleRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/alerts/rules/$ruleId/edit",
  component: lazyRouteComponent(() => import("../alerts/RuleFormPage"), "EditRulePage"),
});

const notificationTargetsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/notification-targets",
  component: lazyRouteComponent(() => import("../notification-targets/TargetsPage"), "TargetsPage"),
});

const profileRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/profile",
  component: lazyRouteComponent(() => import("../profile/ProfilePage"), "ProfilePage"),
});

const auditRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/audit",
  validateSearch: auditSearch,
  component: lazyRouteComponent(() => import("../audit/AuditPage"), "AuditPage"),
});

// The platform's activity across organizations: Super Admins only (the page says so to others).
const activityRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/activity",
  validateSearch: activitySearch,
  component: lazyRouteComponent(() => import("../activity/ActivityPage"), "ActivityPage"),
});

// Members & roles: three pages under /members (members/MembersTabs.tsx), and API keys.
const membersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/members",
  component: lazyRouteComponent(() => import("../members/MembersPage"), "MembersPage"),
});

const invitationsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/members/invitations",
  component: lazyRouteComponent(() => import("../invitations/InvitationsPage"), "InvitationsPage"),
});

const rolesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/members/roles",
  component: lazyRouteComponent(() => import("../roles/RolesPage"), "RolesPage"),
});

const apiKeysRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/api-keys",
  component: lazyRouteComponent(() => import("../api-keys/ApiKeysPage"), "ApiKeysPage"),
});

// The organization acted in: details and branding (organizations/).
const organizationSettingsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/organization",
  component: lazyRouteComponent(() => import("../organizations/OrganizationSettingsPage"), "OrganizationSettingsPage"),
});

// The platform, for Super Admins (each page renders Forbidden for anyone else).
const platformUsersRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/platform/users",
  validateSearch: usersSearch,
  component: lazyRouteComponent(() => import("../users/UsersPage"), "UsersPage"),
});

const platformOrganizationsRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/platform/organizations",
  validateSearch: organizationsSearch,
  component: lazyRouteComponent(() => import("../organizations/OrganizationsPage"), "OrganizationsPage"),
});

const tenantSwitchesRoute = createRoute({
  getParentRoute: () => appRoute,
  path: "/platform/tenant-switches",
  component: lazyRouteComponent(() => import("../tenant/TenantSwitchesPage"), "TenantSwitchesPage"),
});

const routeTree = rootRoute.addChildren([
  signInRoute,
  acceptInvitationRoute,
  appRoute.addChildren([
    overviewRoute, devicesRoute, deviceRoute, groupsRoute, enrollmentRequestsRoute, enrollmentRoute,
    applicationsRoute, applicationRoute, registriesRoute, marketplaceRoute,
    jobsRoute, jobRoute, deploymentsRoute, newDeploymentRoute, editDeploymentRoute, deploymentRoute, profileRoute,
    certificatesRoute, configRoute, configSourceRoute, configLayersRoute, configLayerRoute,
    alertsRoute, alertRulesRoute, newAlertRuleRoute, editAlertRuleRoute, notificationTargetsRoute,
    auditRoute, activityRoute,
    membersRoute, invitationsRoute, rolesRoute, apiKeysRoute,
    organizationSettingsRoute, platformUsersRoute, platformOrganizationsRoute, tenantSwitchesRoute,
  ]),
]);

export const router = createRouter({
  routeTree,
  context: { queryClient },
  defaultPreload: "intent",
  scrollRestoration: true,
  // While a route's session check or code chunk is on its way (a busy server, a slow link), the
  // page says so instead of staying blank.
  defaultPendingComponent: () => <Loading label="Loading the page" />,
});

// A session that ends while the console is open (expired, signed out elsewhere, revoked):
// drop what it could see and return to sign-in, then to this page.
setSessionEndedHandler(() => {
  const { pathname, href } = router.state.location;
  forgetSignedIn();
  if (pathname === "/sign-in") return;
  // No session known to this page yet: the 401 is the signed-in area's own first check, which
  // leads to sign-in by itself. Nothing ended, so the sign-in page must not say it did.
  if (queryClient.getQueryData(sessionQuery().queryKey) === undefined) return;
  // Leave the signed-in area first, then drop what it could see: cleared while the shell is
  // still mounted, the session it reads would be asked for again during a render, and that
  // 401 thrown from the render (a console error) before the sign-in page shows.
  void router.navigate({ to: "/sign-in", search: { next: href, reason: "expired" } }).then(() => queryClient.clear());
});

declare module "@tanstack/react-router" {
  interface Register {
    router: typeof router;
  }
}


