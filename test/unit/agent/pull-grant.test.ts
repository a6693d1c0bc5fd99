// Pull grants (src/modules/agent/pull-grant.ts): which images of a compose file a grant covers,
// and that only a grant signed with the grants' own key, unexpired, is accepted.
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { composeImages, pullGrantKey, signPullGrant, splitImageReference, verifyPullGrant } from "../../../src/modules/agent/pull-grant.js";

const jwtKey = new TextEncoder().encode("a-service-jwt-secret-of-at-least-32-characters");
const claims = {
  deviceId: "0b0e6f5e-5c1a-4c55-9e43-0f1b2f3a4b5c", organizationId: "1b0e6f5e-5c1a-4c55-9e43-0f1b2f3a4b5c", fingerprint: "ab12",
  deploymentId: "2b0e6f5e-5c1a-4c55-9e43-0f1b2f3a4b5c", repositories: [{ registryId: "3b0e6f5e-5c1a-4c55-9e43-0f1b2f3a4b5c", repository: "team/web" }],
};

describe("pull grants", () => {
  it("split image references as the engines read them", () => {
    expect(splitImageReference("Registry.Example:5000/team/web:1.2")).toEqual({ host: "registry.example:5000", repository: "team/web" });
    expect(splitImageReference("registry.example/team/web@sha256:abc")).toEqual({ host: "registry.example", repository: "team/web" });
    expect(splitImageReference("localhost/web")).toEqual({ host: "localhost", repository: "web" });
    expect(splitImageReference("busybox:1")).toEqual({ host: "docker.io", repository: "library/busybox" });
    expect(splitImageReference("team/web")).toEqual({ host: "docker.io", repository: "team/web" });
    expect(splitImageReference("${REGISTRY}/web:1")).toBeNull();
  });

  it("name the images of a compose file with the deployment's parameters applied", () => {
    const compose = [
      "services:",
      "  web: { image: \"registry.example/team/web:${TAG:-1}\" }",
      "  db: { image: registry.example/team/db:15 }",
      "  worker: { image: $HOST/team/worker }",
      "  built: { build: . }",
    ].join("\n");
    expect(composeImages(compose, { TAG: "2.0", HOST: "other.example", "/services/db/image": "registry.example/team/db:16" }))
      .toEqual(["registry.example/team/web:2.0", "registry.example/team/db:16", "other.example/team/worker"]);
    expect(composeImages(compose, {})).toEqual(["registry.example/team/web:1", "registry.example/team/db:15", "$HOST/team/worker"]);
    expect(composeImages("services: [", {})).toEqual([]);
  });

  it("accept only their own key's unexpired grants: a user token signed with the JWT key is none", async () => {
    const key = pullGrantKey(jwtKey);
    const token = await signPullGrant(key, claims, new Date(Date.now() + 60_000));
    expect(await verifyPullGrant(key, token)).toEqual(claims);
    expect(await verifyPullGrant(key, await signPullGrant(key, claims, new Date(Date.now() - 1000)))).toBeNull();
    expect(await verifyPullGrant(pullGrantKey(new TextEncoder().encode("another-service-secret-of-32-characters!")), token)).toBeNull();
    // the same claims signed with the service's JWT key itself (the key of user tokens)
    const [, payload] = token.split(".");
    const body = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    const withJwtKey = await new SignJWT(body).setProtectedHeader({ alg: "HS256", typ: "pull-grant" }).sign(jwtKey);
    expect(await verifyPullGrant(key, withJwtKey)).toBeNull();
  });
});
