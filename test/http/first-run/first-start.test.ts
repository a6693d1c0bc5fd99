// A newcomer's first `npm start` (the service's build as a child process, test/support/server-process.ts):
// the first-start block is printed (the generated password and API key only to a terminal) and
// kept, with them, in DATA_DIR/first-start.txt, mode 0600, until the admin changes the password; at the default
// log level a request writes no per-request line (it would bury the block); SIGTERM ends with
// a "stopped" line. The embedded database is created (every migration) by a child process that
// exits before the service opens it (src/db/first-start-migration.ts).
import fs from "node:fs";
import { readMigrations } from "../../../src/db/migrate.js";
import { afterAll, describe, expect, it } from "vitest";
import { eventually, spawnService, type ServerProcess } from "../../support/server-process.js";

let p: ServerProcess | undefined;

afterAll(async () => {
  await p?.kill();
});

/** The value after `label:` in the printed block. */
const field = (output: string[], label: string) => {
  const line = output.find((l) => l.startsWith(`  ${label}:`));
  if (!line) throw new Error(`no "${label}" line in:\n${output.join("\n")}`);
  return line.slice(line.indexOf(":") + 1).trim().split(/\s+/)[0];
};

describe("first start of npm start", () => {
  it("keeps the first-start block in a 0600 file until the admin changes the password; requests leave no info line; stopping says stopped", async () => {
    // LOG_LEVEL as a newcomer has it: unset (server-process.ts sets info, the default; say so here too)
    // (slow requests are logged at warn on purpose; a loaded test machine must not make these slow)
    p = await spawnService("first-start", { LOG_LEVEL: "info", LOG_SLOW_REQUEST_MS: "0", BOOTSTRAP_ADMIN_EMAIL: "admin@example.com" });
    const output = p.output;
    await eventually(async () => output.some((l) => l.startsWith("  kept in:")), 10_000, "the kept-in line");
    const file = field(output, "kept in");
    // the file: readable by the service's user only, with the password and the key in it
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const kept = fs.readFileSync(file, "utf8").split("\n");
    const password = field(kept, "password");
    const apiKey = field(kept, "API key");
    expect(apiKey).toMatch(/^fm_/);
    expect(field(kept, "admin e-mail")).toBe("admin@example.com");
    // stdout is no terminal here (a pipe, as journald or a container's log): the block says where
    // the generated secrets are and prints neither
    expect(output.join("\n")).not.toContain(password);
    expect(output.join("\n")).not.toContain(apiKey);
    expect(output).toContain("  API key:       (generated; in the file below, not printed without a terminal; set BOOTSTRAP_API_KEY to choose it)");

    // requests at the default level: answered, not logged line by line
    expect((await p.api("GET", "/api/v1/organizations/by-slug/default", { key: apiKey })).status).toBe(200);
    expect((await p.api("GET", "/api/v1/devices?limit=1", { key: apiKey })).status).toBe(200);

    // the admin changes the password: the kept block is void and goes
    const login = await p.api("POST", "/api/v1/auth/login", { key: null, body: { email: "admin@example.com", password } });
    expect(login.status).toBe(200);
    const changed = await p.api("POST", "/api/v1/profile/password", { key: null, token: login.body.accessToken, body: { currentPassword: password, newPassword: "a-new-password-123" } });
    expect(changed.status, changed.text).toBe(200);
    await eventually(async () => !fs.existsSync(file), 10_000, "the first-start file deleted");

    // SIGTERM: a clean exit whose last line says stopped
    expect(await p.stop()).toBe(0);
    const json = output.flatMap((l) => {
      try {
        return [JSON.parse(l) as { msg: string; level: number; status?: number }];
      } catch {
        return [];
      }
    });
    expect(json.at(-1)?.msg).toBe("stopped");
    // the database was created by the migration process, every migration of the checkout, before "ready"
    const created = json.findIndex((l) => l.msg === "created the embedded database");
    expect(created, "the line saying the embedded database was created").toBeGreaterThanOrEqual(0);
    expect((json[created] as { migrations?: number }).migrations).toBe(readMigrations().length);
    expect(created).toBeLessThan(json.findIndex((l) => l.msg === "ready"));
    expect(json.some((l) => l.msg === "shutting down")).toBe(true);
    // no per-request line at info (30): five requests were made, none of them wrote one
    expect(json.filter((l) => l.msg === "request")).toEqual([]);
  }, 240_000); // a first start on PGlite creates the database
});
