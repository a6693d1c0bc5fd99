// A container engine for the agent's loop in process (FleetAgent against the in-process
// service): nothing on it unless the test says otherwise. No deployment is involved.
import type { ComposeEngine } from "../../../agent/src/runtime/engine.js";

export function fakeEngine(overrides: Partial<ComposeEngine> = {}): ComposeEngine {
  return {
    kind: "podman",
    version: async () => "podman version 4.3.1; podman-compose version 1.0.3",
    pull: async () => {},
    pullImage: async () => {},
    up: async () => {},
    down: async () => {},
    containers: async () => [],
    containersOf: async () => [],
    logFile: async () => null,
    projects: async () => [],
    logs: async () => [],
    runHealthCheck: async () => {},
    ...overrides,
  };
}
