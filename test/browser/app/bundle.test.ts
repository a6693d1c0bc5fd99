// What the console ships to every browser: no server code and no secret. (No browser needed:
// this runs wherever the suite runs.)
// * The module graph of a production build (made here, in memory, with the project's own Vite
//   configuration): every module is the console's own (web/src), a browser package from
//   node_modules that is no server package, or one of the few files of src/ written to be
//   shared (pure rules without a single import). No Node built-in is stubbed in.
// * The files npm start serves (web/dist): no `node:` import, no server package's name, no
//   source map, React's production build, and nothing that looks like a secret: no PEM block,
//   no key or token in the service's formats, no value of .env, no key file of ./data.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Plugin } from "vite";
import { buildConsole, CONSOLE_DIST, CONSOLE_SOURCE } from "../../../src/lib/console-build.js";
import { ROOT } from "../../support/server-process.js";

/** Files of src/ the console may import at run time: pure rules, shared so that the console checks input as the API does. */
const SHARED_WITH_THE_CONSOLE = [
  "src/modules/devices/selector.ts",
  "src/modules/applications/manifest/parameter-rules.ts",
  "src/modules/deployments/batch-plan.ts",
  "src/modules/deployments/rollout-moves.ts",
  "src/modules/deployments/rollout-words.ts",
  "src/modules/deployments/deployment-state.ts",
  "src/modules/rollout-engine/window-rules.ts",
  "src/modules/device-actions/kinds.ts",
  "src/modules/groups/architectures.ts",
  "src/lib/plural.ts",
];
/** Packages that belong on the server only. */
const SERVER_PACKAGES = [
  "@prisma", "prisma", "@electric-sql", "pglite-prisma-adapter", "pg", "express", "helmet", "pino", "jose", "nodemailer", "isomorphic-git",
  "ws", "tsx", "rate-limiter-flexible", "trpc-to-openapi", "swagger-ui-dist", "@peculiar", "cookie", "yaml", "semver",
];
const SECRET_SHAPES: [string, RegExp][] = [
  ["a PEM block", /-----BEGIN [A-Z ]+-----/],
  ["an API key", /\bfm_[A-Za-z0-9_-]{30,}/],
  ["an enrollment token", /\bfme_[A-Za-z0-9_-]{20,}/],
  ["a session cookie", /\bfmc_[A-Za-z0-9_-]{20,}/],
  ["a refresh token", /\bfmr_[A-Za-z0-9_-]{20,}/],
];

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

/** Values of the project's .env and key files of ./data, when this checkout has them: none may reach the bundle. */
function localSecrets(): string[] {
  const secrets: string[] = [];
  const envFile = path.join(ROOT, ".env");
  if (fs.existsSync(envFile)) {
    for (const line of fs.readFileSync(envFile, "utf8").split("\n")) {
      const value = /^\s*[A-Z0-9_]+\s*=\s*"?([^"#\n]*)"?/.exec(line)?.[1]?.trim();
      if (value && value.length >= 8) secrets.push(value);
    }
  }
  const dataDir = path.join(ROOT, "data");
  if (fs.existsSync(dataDir)) {
    for (const file of fs.readdirSync(dataDir).filter((f) => f.endsWith(".key"))) secrets.push(fs.readFileSync(path.join(dataDir, file), "utf8").trim());
  }
  for (const name of ["BOOTSTRAP_ADMIN_PASSWORD", "BOOTSTRAP_API_KEY", "JWT_SECRET", "ENCRYPTION_KEY"]) {
    const value = process.env[name];
    if (value && value.length >= 8) secrets.push(value);
  }
  return secrets;
}

describe("the console's bundle", () => {
  it("is built from the console's own modules and browser packages only, with no server module", async () => {
    const modules: string[] = [];
    const recorder: Plugin = {
      name: "record-modules",
      generateBundle() {
        modules.push(...this.getModuleIds());
      },
    };
    await buildConsole({ logLevel: "silent", plugins: [recorder], build: { write: false } });
    expect(modules.length).toBeGreaterThan(50);

    const problems: string[] = [];
    for (const id of modules) {
      const file = id.split("?")[0];
      if (file.includes("__vite-browser-external") || file.startsWith("node:")) {
        problems.push(`a Node built-in is imported: ${id}`);
        continue;
      }
      if (file.startsWith("\0")) continue; // Vite's and Rolldown's own helpers
      const relative = path.relative(ROOT, file).split(path.sep).join("/");
      if (relative.startsWith("node_modules/")) {
        const parts = relative.slice("node_modules/".length).split("/");
        const pkg = parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
        if (SERVER_PACKAGES.some((p) => pkg === p || pkg.startsWith(`${p}/`))) problems.push(`a server package: ${relative}`);
        if (relative.includes("@trpc/server/dist/adapters")) problems.push(`a tRPC server adapter: ${relative}`);
        continue;
      }
      if (relative.startsWith("web/src/") || relative === "web/index.html") continue;
      if (SHARED_WITH_THE_CONSOLE.includes(relative)) continue;
      problems.push(`a module outside the console: ${relative}`);
    }
    expect(problems).toEqual([]);

    // The shared files stay pure: whatever they would import would come along (an `import type`
    // is erased by the build and brings nothing).
    for (const shared of SHARED_WITH_THE_CONSOLE) {
      const text = fs.readFileSync(path.join(ROOT, shared), "utf8");
      expect(text, shared).not.toMatch(/^\s*import(?!\s+type\s)[\s{*"']/m);
      expect(text, shared).not.toMatch(/^\s*export\s*(type\s*)?(\*|\{[^}]*\})\s*from\s/m);
      expect(modules.map((m) => path.relative(ROOT, m.split("?")[0]).split(path.sep).join("/"))).toContain(shared);
    }
  });

  it("as served (web/dist): no Node import, no server package, no source map, React's production build, no secret", () => {
    expect(fs.existsSync(path.join(CONSOLE_DIST, "index.html")), "web/dist is built (npm install does it)").toBe(true);
    const files = filesUnder(CONSOLE_DIST);
    expect(files.filter((f) => f.endsWith(".map"))).toEqual([]);
    const secrets = localSecrets();
    const problems: string[] = [];
    let scripts = 0;
    for (const file of files) {
      const text = fs.readFileSync(file, "utf8");
      const name = path.relative(CONSOLE_SOURCE, file);
      if (file.endsWith(".js")) {
        scripts++;
        if (/["'`]node:[a-z_/]+["'`]/.test(text)) problems.push(`${name} imports a Node built-in`);
        const server = /\b(PrismaClient|@prisma\/client|@electric-sql\/pglite|express|pino|nodemailer|isomorphic-git)\b/.exec(text);
        if (server) problems.push(`${name} names a server package: ${server[0]}`);
        if (/Download the React DevTools|react-dom\.development/.test(text)) problems.push(`${name} is React's development build`);
      }
      for (const [what, shape] of SECRET_SHAPES) if (shape.test(text)) problems.push(`${name} holds ${what}`);
      for (const secret of secrets) if (text.includes(secret)) problems.push(`${name} holds a value of .env or a key of ./data (${secret.slice(0, 3)}…)`);
    }
    expect(scripts).toBeGreaterThan(3);
    expect(problems).toEqual([]);
  });
});
