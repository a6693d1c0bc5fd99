// Rendering a deployment's parameters into a component's compose file (agent/src/runtime/compose-file.ts).
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ComposeFileError, composeServiceNames, renderComposeFile } from "../../../agent/src/runtime/compose-file.js";

const COMPOSE = `# the gateway and its sidecar
services:
  gateway:
    image: registry.example/gateway:\${TAG:-2.4.1}
    environment:
      LOG_LEVEL: info   # kept
  sidecar:
    image: registry.example/sidecar:1
    environment:
      - MODE=edge
      - POLL_SECONDS=5
`;

describe("renderComposeFile", () => {
  it("sets an environment-variable pointer in every service, in the form each uses, and writes it to .env", () => {
    const { compose, env } = renderComposeFile(COMPOSE, { POLL_SECONDS: 60, DEBUG: false });
    expect(parse(compose)).toEqual({
      services: {
        gateway: { image: "registry.example/gateway:${TAG:-2.4.1}", environment: { LOG_LEVEL: "info", POLL_SECONDS: "60", DEBUG: "false" } },
        sidecar: { image: "registry.example/sidecar:1", environment: ["MODE=edge", "POLL_SECONDS=60", "DEBUG=false"] },
      },
    });
    expect(env).toBe("POLL_SECONDS=60\nDEBUG=false\n");
    // The file's comments survive: an operator reading compose.yaml on the device sees them.
    expect(compose).toContain("# the gateway and its sidecar");
    expect(compose).toContain("# kept");
  });

  it("adds an environment to a service that has none", () => {
    const { compose } = renderComposeFile("services:\n  app:\n    image: a:1\n", { API_URL: "https://api.example/v1" });
    expect(parse(compose)).toEqual({ services: { app: { image: "a:1", environment: { API_URL: "https://api.example/v1" } } } });
  });

  it("keeps a value literal: `$` doubled for compose, .env quoted so neither compose program interpolates or splits it", () => {
    const { compose, env } = renderComposeFile("services:\n  app:\n    image: a:1\n", {
      TOKEN: "tok-$HOME${X}",
      GREETING: "it's a \"test\"\nline two",
      MOTD: "hello world",
      LIST: ["a", 1],
    });
    expect(parse(compose).services.app.environment).toEqual({
      TOKEN: "tok-$$HOME$${X}",
      GREETING: "it's a \"test\"\nline two",
      MOTD: "hello world",
      LIST: '["a",1]',
    });
    expect(env).toBe(`TOKEN='tok-$HOME\${X}'\nGREETING="it's a \\"test\\"\\nline two"\nMOTD='hello world'\nLIST='["a",1]'\n`);
  });

  it("sets a JSON pointer's place with the value's type, creating missing maps", () => {
    const { compose, env } = renderComposeFile(COMPOSE, {
      "/services/gateway/image": "registry.example/gateway:3.0.0",
      "/services/gateway/deploy/resources/limits/memory": "512M",
      "/services/sidecar/environment/0": "MODE=cloud",
      "/x-fleet~1meta/replicas": 2,
    });
    const doc = parse(compose);
    expect(doc.services.gateway.image).toBe("registry.example/gateway:3.0.0");
    expect(doc.services.gateway.deploy).toEqual({ resources: { limits: { memory: "512M" } } });
    expect(doc.services.sidecar.environment).toEqual(["MODE=cloud", "POLL_SECONDS=5"]);
    expect(doc["x-fleet/meta"]).toEqual({ replicas: 2 });
    expect(env).toBe("");
  });

  it("leaves the file byte for byte as it was without parameters", () => {
    const { compose, env } = renderComposeFile(COMPOSE, {});
    expect(compose).toBe(COMPOSE);
    expect(env).toBe("");
  });

  it("refuses a pointer that is neither an environment variable name nor a JSON pointer, naming it", () => {
    expect(() => renderComposeFile(COMPOSE, { "global.pollSeconds": 30 })).toThrow(
      'parameter pointer "global.pollSeconds" is neither an environment variable name (POLL_SECONDS) nor a JSON pointer into the compose file (/services/web/image)',
    );
    expect(() => renderComposeFile(COMPOSE, { "/services/gateway/image/tag": 1 })).toThrow("parameter pointer /services/gateway/image/tag: services/gateway/image is not a map or a list");
    expect(() => renderComposeFile(COMPOSE, { "/services/sidecar/environment/first": 1 })).toThrow("a list is indexed by a number");
  });

  it("refuses a file that is not YAML or names no service", () => {
    expect(() => renderComposeFile("services: [unclosed", {})).toThrow(ComposeFileError);
    expect(() => renderComposeFile("services: [unclosed", {})).toThrow(/^the compose file is not valid YAML: /);
    for (const text of ["", "just text", "version: '3'\n", "services: []\n", "services: {}\n"]) {
      expect(() => renderComposeFile(text, {})).toThrow("the compose file has no services (a top-level `services` map naming at least one)");
    }
    expect(() => renderComposeFile("services:\n  app: just-a-string\n", { A: 1 })).toThrow("service app of the compose file is not a map");
  });
});

describe("composeServiceNames", () => {
  it("lists the services in file order", () => {
    expect(composeServiceNames(COMPOSE)).toEqual(["gateway", "sidecar"]);
  });
});
