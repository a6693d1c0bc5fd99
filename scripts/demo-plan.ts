// What `npm run demo`'s simulated devices do on purpose (scripts/demo.ts), so that the tour in
// the README ends the same way at every run: a fixed seed, no failure left to chance, and two
// deliberate ones the tour shows:
//
// * one device, demo-000013, reports `error` from its first heartbeat on and never recovers
//   (its Logs tab shows why): the fleet health reads 52 online and 1 error;
// * `mqtt-broker` 5.0.2 is a broken build: every simulated device fails to install it, on
//   every attempt, with a message saying so. A staged rollout of it pauses by itself when its
//   canary crosses the failure threshold, whichever devices the canary holds; every other
//   application installs on every device, so the `vision-gateway` rollout's canary succeeds.
//
// And who runs the tour: an operator (role operator: runs the fleet, not its people), as the
// README calls them. test/http/simulator/seeded-demo.test.ts runs this plan against a test service three times
// and checks that the rollouts end the same way each time.
import type { SimulatorOptions } from "../src/simulator/engine.js";
import type { ApiCall } from "./sample-apps.js";

/** The broken build of the tour (an application of scripts/sample-apps.ts). */
export const BROKEN_BUILD = { application: "mqtt-broker", version: "5.0.2", profileId: "helm-default" } as const;

/** The device that reports errors all along (exists when the demo has at least 13 devices). */
export const FAILING_DEVICE = "demo-000013";

export const DEMO_SIMULATION = {
  seed: 20_261_127,
  idPrefix: "demo",
  /** no health failure by chance: the one failing device is FAILING_DEVICE */
  failureRate: 0,
  /** no install fails by chance: only the broken build does */
  deploymentFailureRate: 0,
  failInstalls: [`${BROKEN_BUILD.application}@${BROKEN_BUILD.version}`],
  failingDevices: [FAILING_DEVICE],
} satisfies Partial<SimulatorOptions>;

/** The demo's person: role operator in organization `demo`. */
export const OPERATOR = { email: "operator@demo.example", password: "demo-operator-password" };

/**
 * Organization `demo`, its operator (role operator) and an API key with the operator role's
 * permissions. An operator may not make keys (api-keys:write), so the Super Admin (`adminKey`)
 * makes it.
 */
export async function setUpDemoOrganization(call: ApiCall, adminKey: string, slug = "demo") {
  const org = await call("POST", "/api/v1/organizations", { key: adminKey, body: { name: "Demo Fleet", slug, description: "Created by npm run demo" } });
  const roles = await call("GET", "/api/v1/roles?limit=200", { key: adminKey });
  const operatorRole = (roles.items as Array<{ id: string; name: string; organizationId: string | null; permissions: string[] }>)
    .find((r) => r.name === "operator" && r.organizationId === null)!;
  const operator = await call("POST", "/api/v1/users", { key: adminKey, body: { email: OPERATOR.email, name: "Demo Operator", password: OPERATOR.password } });
  await call("POST", `/api/v1/users/${operator.id}/organizations`, { key: adminKey, body: { organizationId: org.id, roleId: operatorRole.id } });
  const apiKey = await call("POST", `/api/v1/organizations/${org.id}/api-keys`, {
    key: adminKey, body: { name: "demo operator", description: "the demo operator's permissions (role operator), made by npm run demo", permissions: operatorRole.permissions },
  });
  return { org, operator, apiKey: apiKey as { key: string; keyPrefix: string } };
}
