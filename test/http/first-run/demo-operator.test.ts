// The demo's person is an operator, as the README calls them (scripts/demo-plan.ts,
// setUpDemoOrganization, what `npm run demo` runs): a member of `demo` with the role operator,
// who signs in, runs the fleet (certificates, enrollment, registries; the rollout itself is
// run by test/http/simulator/seeded-demo.test.ts with an operator's key) and may not manage
// keys or people; the demo key carries the operator's permissions and no more.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, createHarness, type Harness } from "../../support/harness.js";
import { OPERATOR, setUpDemoOrganization } from "../../../scripts/demo-plan.js";
import { apiCaller } from "../../../scripts/sample-apps.js";

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});

afterAll(async () => {
  await h?.close();
});

describe("the demo's operator", () => {
  it("holds the operator role, runs the fleet and may not manage keys or people; so does the demo key", async () => {
    const { org, apiKey } = await setUpDemoOrganization(apiCaller(h.url), ADMIN_KEY);
    const members = await h.api("GET", `/api/v1/organizations/${org.id}/members?limit=10`, { key: ADMIN_KEY });
    expect(members.status, members.text).toBe(200);
    expect(members.body.items.map((m: { email: string; role: { name: string } | string; roleName?: string }) =>
      [m.email, typeof m.role === "string" ? m.role : m.role?.name ?? m.roleName])).toEqual([[OPERATOR.email, "operator"]]);

    const login = await h.api("POST", "/api/v1/auth/login", { key: null, body: OPERATOR });
    expect(login.status).toBe(200);
    const asOperator = { key: null, token: login.body.accessToken };
    // runs the fleet ...
    const token = await h.api("POST", "/api/v1/enrollment-tokens", { ...asOperator, body: { name: "line 1", labels: { site: "demo-plant" } } });
    expect(token.status, token.text).toBe(201);
    // ... but not its people or keys
    const key = await h.api("POST", `/api/v1/organizations/${org.id}/api-keys`, { ...asOperator, body: { name: "mine", permissions: ["devices:read"] } });
    expect(key.status).toBe(403);
    const roles = await h.api("GET", "/api/v1/roles?limit=200", { key: ADMIN_KEY });
    const viewer = roles.body.items.find((r: { name: string }) => r.name === "viewer");
    const invite = await h.api("POST", "/api/v1/invitations", { ...asOperator, body: { email: "x@demo.example", roleId: viewer.id } });
    expect(invite.status, invite.text).toBe(403);

    // the demo key: the operator's permissions
    const ca = await h.api("POST", "/api/v1/ca-certificates/generate", { key: apiKey.key, body: { name: "Demo Root CA", commonName: "Demo Fleet Root CA" } });
    expect(ca.status, ca.text).toBe(201);
    const another = await h.api("POST", `/api/v1/organizations/${org.id}/api-keys`, { key: apiKey.key, body: { name: "more", permissions: ["devices:read"] } });
    expect(another.status).toBe(403);
  });
});
