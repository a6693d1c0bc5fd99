// The service the browser tests drive: the service (its build, as `npm start` runs it) as a child process, started the way
// `npm start` starts it (PGlite in a DATA_DIR of its own, keys generated there, the built
// console served at /), on a free loopback port, with the bootstrap admin and key chosen here.
// The database there is already migrated (server-process.ts: migratedDataDir), except for
// `asNewcomer`, whose first start creates it as a newcomer's does. Plus
// what the tests set up through the public API (organizations, users with a role) and
// simulated devices speaking the real agent protocol (src/simulator).
//
// Devices heartbeat when a test says so, not on timers: a page and the API then read the same
// fleet, so the numbers a test compares cannot move underneath it. HEARTBEAT_INTERVAL_SECONDS
// is an hour, so that a device stays online between a test's heartbeats.
import crypto from "node:crypto";
import fs from "node:fs";
import { FleetSimulator, type SimulatorOptions } from "../../src/simulator/engine.js";
import type { VirtualDevice } from "../../src/simulator/virtual-device.js";
import { restClient, type ApiResponse, type CallOptions } from "./rest-client.js";
import { SecretWatch } from "./secret-watch.js";
import { eventually, spawnService, type ServerProcess } from "./server-process.js";

export const ADMIN = {
  email: "admin@console.test",
  password: "console-admin-password-1",
  key: "fm_" + "C".repeat(40),
  name: "Admin",
};
/** The password of every user a test creates (they differ by e-mail). */
export const USER_PASSWORD = "console-user-password-1";

export type SystemRole = "owner" | "admin" | "operator" | "viewer";

export interface Organization {
  id: string;
  slug: string;
  name: string;
}

export interface User {
  id: string;
  email: string;
  password: string;
  name: string;
}

export interface SimulatedFleet {
  simulator: FleetSimulator;
  devices: VirtualDevice[];
  /** the enrollment token's labels, on every device */
  labels: Record<string, string>;
  /** one heartbeat from each device (or the ones given): online, or error for those marked failing */
  heartbeat(devices?: VirtualDevice[]): Promise<void>;
  /** `count` telemetry snapshots from each device (or the ones given) */
  sendTelemetry(count?: number, devices?: VirtualDevice[]): Promise<void>;
}

/** What a first start without BOOTSTRAP_ADMIN_PASSWORD/BOOTSTRAP_API_KEY printed (README, Quick start). */
export interface FirstStart {
  /** the block's lines, as printed */
  block: string[];
  email: string;
  password: string;
  apiKey: string;
  /** the file the block is kept in (DATA_DIR/first-start.txt) */
  keptIn: string;
}

export interface ConsoleService {
  url: string;
  process: ServerProcess;
  defaultOrg: Organization;
  /** with `asNewcomer`: the first-start block the service printed (the admin and key it generated) */
  firstStart?: FirstStart;
  /** the REST API as the bootstrap admin's API key (or as `opts.key` / `opts.token`) */
  api<T = any>(method: string, path: string, opts?: CallOptions): Promise<ApiResponse<T>>;
  /** the same, failing the test on anything but a 2xx, answering the body */
  call<T = any>(method: string, path: string, opts?: CallOptions): Promise<T>;
  createOrganization(name: string): Promise<Organization>;
  /** a user with a password, member of `organizationId` (default: the default organization) with `role` */
  createUser(role: SystemRole, opts?: { organizationId?: string; name?: string }): Promise<User>;
  addMember(userId: string, organizationId: string, role: SystemRole): Promise<void>;
  /** a user with a password, member of the default organization with a new custom role `roleName` granting `permissions` */
  createUserWithPermissions(roleName: string, permissions: string[]): Promise<User>;
  /** a bearer token for `user` (the API as that person, for setups and cross-checks) */
  bearer(user: { email: string; password: string }): Promise<string>;
  /**
   * Enrolls `devices` simulated devices with a new enrollment token carrying `labels`, in the
   * organization `as` acts in (default: the admin key's); they send their first heartbeat.
   */
  enrollFleet(opts: {
    prefix: string; devices: number; labels?: Record<string, string>; as?: CallOptions; heartbeat?: boolean;
    /** how the devices carry out deployments (e.g. `{ timeScale: 0, deploymentFailureRate: 0.3 }`: immediate steps, 30 % of installs fail) */
    deployments?: Pick<SimulatorOptions, "timeScale" | "deploymentFailureRate" | "deploymentTimings" | "systemUpdates">;
  }): Promise<SimulatedFleet>;
  /** the requests the service answered so far, from its request log */
  requestLog(): { method: string; path: string; status: number }[];
  /** a secret the service must never log (a session cookie the browser got) */
  rememberSecret(secret: string): void;
  close(): Promise<void>;
}

/** The value after `label:` in the printed first-start block. */
function firstStartField(block: string[], label: string): string {
  const line = block.find((l) => l.startsWith(`  ${label}:`));
  if (!line) throw new Error(`no "${label}" line in the first-start block:\n${block.join("\n")}`);
  return line.slice(line.indexOf(":") + 1).trim().split(/\s+/)[0];
}

/**
 * Starts the service; `env` adds to (or overrides) its configuration. `asNewcomer`: as plain
 * `npm start` (no bootstrap e-mail, password or key chosen, LOG_LEVEL info): the admin and key
 * are the generated ones its first-start block prints (`firstStart`), and `api` uses that key.
 */
export async function startConsoleService(env: Record<string, string> = {}, options: { asNewcomer?: boolean } = {}): Promise<ConsoleService> {
  const watch = new SecretWatch([ADMIN.password, ADMIN.key, USER_PASSWORD]);
  const chosen: Record<string, string> = options.asNewcomer ? {} : {
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    BOOTSTRAP_API_KEY: ADMIN.key,
    HEARTBEAT_INTERVAL_SECONDS: "3600",
    LOG_LEVEL: "debug", // one line per request (requestLog reads them); at info only errors and slow ones
  };
  // A newcomer's first start creates the database; the other tests start on a migrated one.
  const proc = await spawnService("console", { ...chosen, ...env }, {
    defaultKey: ADMIN.key, watch, database: options.asNewcomer ? "fresh" : "migrated", startTimeoutMs: options.asNewcomer ? 180_000 : undefined,
  });
  let firstStart: FirstStart | undefined;
  let api = proc.api;
  if (options.asNewcomer) {
    // printed right after "ready"
    const block = await eventually(async () => {
      const start = proc.output.findIndex((l) => l.startsWith("First start:"));
      const end = proc.output.findIndex((l, i) => i > start && /^ {2}(kept in|not kept):/.test(l));
      return start >= 0 && end > start && proc.output.slice(start, end + 1);
    }, 30_000, "the first-start block");
    // the generated password and key are printed to a terminal only: here (a pipe) they are read
    // from the kept file, as an operator under systemd or in a container does
    const keptIn = firstStartField(block, "kept in");
    const kept = fs.readFileSync(keptIn, "utf8").split("\n");
    firstStart = { block, email: firstStartField(block, "admin e-mail"), password: firstStartField(kept, "password"), apiKey: firstStartField(kept, "API key"), keptIn };
    watch.add(firstStart.password);
    watch.add(firstStart.apiKey);
    api = restClient(proc.url, firstStart.apiKey, watch);
  }
  const fleets: FleetSimulator[] = [];

  const call: ConsoleService["call"] = async (method, path, opts) => {
    const res = await api(method, path, opts);
    if (res.status < 200 || res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
    return res.body;
  };

  const defaultOrg = await call<Organization>("GET", "/api/v1/organizations/by-slug/default");
  const roles = await call<{ items: { id: string; name: string }[] }>("GET", "/api/v1/system-roles");
  const roleId = (role: SystemRole) => {
    const found = roles.items.find((r) => r.name === role);
    if (!found) throw new Error(`no system role ${role}`);
    return found.id;
  };
  const cas = new Set<string>();

  const addMember: ConsoleService["addMember"] = async (userId, organizationId, role) => {
    await call("POST", `/api/v1/users/${userId}/organizations`, { body: { organizationId, roleId: roleId(role) } });
  };

  const bearer: ConsoleService["bearer"] = async (user) => {
    const body = await call<{ accessToken: string }>("POST", "/api/v1/auth/login", { key: null, body: { email: user.email, password: user.password } });
    watch.add(body.accessToken);
    return body.accessToken;
  };

  return {
    url: proc.url,
    process: proc,
    defaultOrg,
    firstStart,
    api,
    call,
    addMember,
    bearer,
    createOrganization: (name) => call("POST", "/api/v1/organizations", { body: { name } }),
    createUser: async (role, opts = {}) => {
      const tag = crypto.randomBytes(4).toString("hex");
      const name = opts.name ?? `${role[0].toUpperCase()}${role.slice(1)} ${tag}`;
      const email = `${role}-${tag}@console.test`;
      const user = await call<{ id: string }>("POST", "/api/v1/users", { body: { email, name, password: USER_PASSWORD } });
      await addMember(user.id, opts.organizationId ?? defaultOrg.id, role);
      return { id: user.id, email, name, password: USER_PASSWORD };
    },
    createUserWithPermissions: async (roleName, permissions) => {
      const role = await call<{ id: string }>("POST", "/api/v1/roles", { body: { name: roleName, permissions } });
      const email = `custom-${crypto.randomBytes(4).toString("hex")}@console.test`;
      const user = await call<{ id: string }>("POST", "/api/v1/users", { body: { email, name: roleName, password: USER_PASSWORD } });
      await call("POST", `/api/v1/users/${user.id}/organizations`, { body: { organizationId: defaultOrg.id, roleId: role.id } });
      return { id: user.id, email, name: roleName, password: USER_PASSWORD };
    },
    enrollFleet: async ({ prefix, devices, labels = {}, as = {}, heartbeat = true, deployments = {} }) => {
      // The organization needs a CA to sign device certificates: one per organization.
      const context = await call<{ organization: { id: string } }>("GET", "/api/v1/tenant/context", as);
      if (!cas.has(context.organization.id)) {
        const existing = await call<{ total: number }>("GET", "/api/v1/ca-certificates?limit=1", as);
        if (existing.total === 0) await call("POST", "/api/v1/ca-certificates/generate", { ...as, body: { name: `ca-${prefix}`, commonName: `${prefix} CA` } });
        cas.add(context.organization.id);
      }
      const token = await call<{ token: string }>("POST", "/api/v1/enrollment-tokens", { ...as, body: { name: `${prefix} devices`, labels, maxUses: devices } });
      const simulator = new FleetSimulator({
        url: proc.url,
        enrollmentToken: token.token,
        devices,
        heartbeatMs: 3_600_000,
        telemetryMs: 0,
        failureRate: 0,
        idPrefix: prefix,
        enrollConcurrency: 4,
        maxSockets: 8,
        ...deployments,
      });
      fleets.push(simulator);
      await simulator.enrollAll();
      const stats = simulator.stats();
      if (stats.enrolled !== devices) throw new Error(`${stats.enrolled} of ${devices} devices enrolled: ${stats.lastError}`);
      const fleet: SimulatedFleet = {
        simulator,
        devices: simulator.devices,
        labels,
        heartbeat: async (which = simulator.devices) => {
          for (const device of which) {
            const res = await device.heartbeat(true);
            if (res.status !== 200) throw new Error(`heartbeat of ${device.reportedDeviceId}: ${res.status} ${JSON.stringify(res.body)}`);
          }
        },
        sendTelemetry: async (count = 1, which = simulator.devices) => {
          for (const device of which) {
            for (let i = 0; i < count; i++) {
              const res = await device.sendTelemetry();
              if (res.status >= 300) throw new Error(`telemetry of ${device.reportedDeviceId}: ${res.status} ${JSON.stringify(res.body)}`);
            }
          }
        },
      };
      if (heartbeat) await fleet.heartbeat();
      return fleet;
    },
    requestLog: () => proc.output.flatMap((line) => {
      if (!line.includes('"msg":"request"')) return [];
      const { method, path, status } = JSON.parse(line) as { method: string; path: string; status: number };
      return [{ method, path, status }];
    }),
    rememberSecret: (secret) => watch.add(secret),
    close: async () => {
      await Promise.all(fleets.map((f) => f.stop()));
      const code = await proc.stop();
      const problems: string[] = [];
      if (code !== 0) problems.push(`the service exited with ${code}`);
      const errors = proc.output.filter((line) => line.includes('"level":50') || line.includes('"level":60'));
      if (errors.length) problems.push(`the service logged errors:\n${errors.slice(0, 10).join("\n")}`);
      // the first-start block shows the generated password and key on purpose; no other line may
      const printedOnPurpose = new Set(firstStart?.block ?? []);
      problems.push(...watch.check(proc.output.filter((line) => !printedOnPurpose.has(line))));
      if (problems.length) throw new Error(problems.join("\n"));
    },
  };
}
