// The layering of docs/architecture.md ("Import rules"), checked on every file of src/:
//
// 1. src/trpc/ (procedure builders, authentication, context, errors) imports no domain module
//    (src/modules/**) and nothing of src/http/. The one exception is the root router,
//    src/trpc/router.ts, which assembles the modules' routers.
// 2. src/http/ (HTTP plumbing shared by all: guarded route, docs, downloads, rate limit, request
//    boundary, error answers, csrf, console) imports no domain module. The one exception is
//    src/http/routes.ts, the list that mounts and documents the modules' plain routes.
//
// 3. The device side and the service stay apart: agent/ imports nothing of src/ but types
//    (`import type`: the router's type its tRPC client is typed on, erased from what runs; a
//    device gets none of the service's code), and src/trpc, src/http and src/modules import
//    nothing of agent/ (the simulator, a tool, runs on the agent's protocol core).
//
// 4. The command-line client talks to a remote service over HTTP: cli/ takes nothing of the
//    service's code but types (`import type`), and no database client at all.
//
// Domain modules may import both (they build on the plumbing), and src/app.ts wires
// everything together. Every import counts: type-only, re-exports and dynamic import() (for
// cli/, type-only imports are allowed: they vanish from what runs).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Files allowed to import domain modules, in folders that otherwise may not. */
const MOUNT_FILES = new Set(["src/trpc/router.ts", "src/http/routes.ts"]);

interface SourceFile {
  /** relative to the repository, with forward slashes: src/trpc/auth.ts */
  path: string;
  text: string;
}

/** The repository-relative path an import specifier of `from` names, or null for a package. */
function resolved(from: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null;
  return path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
}

const within = (file: string, folder: string) => file.startsWith(`${folder}/`);

/** The specifiers a file imports or re-exports with `import type` / `export type` only (nothing of them runs). */
function typeOnlyImports(file: SourceFile): Set<string> {
  const source = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true);
  const typeOnly = new Set<string>();
  const valued = new Set<string>();
  for (const node of source.statements) {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const isType = ts.isImportDeclaration(node) ? Boolean(node.importClause?.isTypeOnly) : node.isTypeOnly;
      (isType ? typeOnly : valued).add(node.moduleSpecifier.text);
    }
  }
  return new Set([...typeOnly].filter((specifier) => !valued.has(specifier)));
}

/** One line per import that breaks a rule: the file, the import as written, and why. */
function importViolations(files: SourceFile[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    const inTrpc = within(file.path, "src/trpc");
    const inHttp = within(file.path, "src/http");
    const inAgent = within(file.path, "agent");
    const inService = inTrpc || inHttp || within(file.path, "src/modules");
    if (!inService && !inAgent) continue;
    const typeOnly = typeOnlyImports(file);
    for (const { fileName: specifier } of ts.preProcessFile(file.text, true, true).importedFiles) {
      const target = resolved(file.path, specifier);
      if (target === null) continue;
      if (inAgent && typeOnly.has(specifier)) continue;
      const apart = inAgent && !within(target, "agent")
        ? "agent/ imports nothing of the service: a device runs none of its code"
        : inService && within(target, "agent")
          ? "the service imports nothing of agent/"
          : null;
      if (apart) {
        violations.push(`${file.path} imports "${specifier}" (${target}): ${apart}`);
        continue;
      }
      if (!inTrpc && !inHttp) continue;
      const why =
        within(target, "src/modules") && !MOUNT_FILES.has(file.path)
          ? inTrpc
            ? "src/trpc imports no domain module (only src/trpc/router.ts assembles their routers)"
            : "src/http imports no domain module (only src/http/routes.ts mounts their plain routes)"
          : inTrpc && within(target, "src/http")
            ? "src/trpc imports nothing of src/http"
            : null;
      if (why) violations.push(`${file.path} imports "${specifier}" (${target}): ${why}`);
    }
  }
  return violations;
}

/** Packages that reach a database: the CLI never opens one. */
const DATABASE_PACKAGES = /^(@prisma\/|prisma$|pg$|pg-|@electric-sql\/|pglite-prisma-adapter$)/;

/** One line per import of a cli/ file that runs service code or opens a database (type-only imports are fine). */
function cliImportViolations(files: SourceFile[]): string[] {
  const violations: string[] = [];
  for (const file of files.filter((f) => within(f.path, "cli"))) {
    const source = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true);
    const imports: string[] = [];
    const visit = (node: ts.Node) => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        const typeOnly = ts.isImportDeclaration(node) ? Boolean(node.importClause?.isTypeOnly) : node.isTypeOnly;
        if (!typeOnly) imports.push(node.moduleSpecifier.text);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
        imports.push(node.arguments[0].text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    for (const specifier of imports) {
      const target = resolved(file.path, specifier);
      if (target !== null && !within(target, "cli")) violations.push(`${file.path} imports "${specifier}" (${target}): cli/ talks to the service over HTTP and takes only types from it`);
      if (target === null && DATABASE_PACKAGES.test(specifier)) violations.push(`${file.path} imports "${specifier}": cli/ never opens a database`);
    }
  }
  return violations;
}

function sourceFiles(folder: string): SourceFile[] {
  return fs.readdirSync(path.join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join("/"))
    .map((file) => ({ path: file, text: fs.readFileSync(path.join(ROOT, file), "utf8") }));
}

describe("import rules", () => {
  it("hold for every file of src/trpc, src/http, src/modules and agent/src", () => {
    const files = [...sourceFiles("src/trpc"), ...sourceFiles("src/http"), ...sourceFiles("src/modules"), ...sourceFiles("agent/src")];
    expect(files.map((f) => f.path)).toContain("src/trpc/procedures.ts");
    expect(files.map((f) => f.path)).toContain("src/http/guarded-route.ts");
    expect(files.map((f) => f.path)).toContain("agent/src/core/session.ts");
    expect(importViolations(files)).toEqual([]);
  });

  it("keep cli/ a remote client: no service code but types, no database", () => {
    const files = sourceFiles("cli/src");
    expect(files.map((f) => f.path)).toContain("cli/src/main.ts");
    expect(cliImportViolations(files)).toEqual([]);
    expect(cliImportViolations([
      { path: "cli/src/commands/deploy.ts", text: `import { moveRefusal } from "../../../src/modules/deployments/rollout-moves.js";` },
      { path: "cli/src/commands/x.ts", text: `const db = await import("../../../src/db/client.js");` },
      { path: "cli/src/commands/y.ts", text: `import { PrismaClient } from "@prisma/client";` },
      { path: "cli/src/commands/ok.ts", text: `import type { RolloutState } from "../../../src/modules/deployments/rollout-moves.js";\nimport { Command } from "commander";\nimport { CliError } from "../errors.js";` },
    ])).toEqual([
      `cli/src/commands/deploy.ts imports "../../../src/modules/deployments/rollout-moves.js" (src/modules/deployments/rollout-moves.js): cli/ talks to the service over HTTP and takes only types from it`,
      `cli/src/commands/x.ts imports "../../../src/db/client.js" (src/db/client.js): cli/ talks to the service over HTTP and takes only types from it`,
      `cli/src/commands/y.ts imports "@prisma/client": cli/ never opens a database`,
    ]);
  });

  it("keep the device side and the service apart", () => {
    expect(importViolations([
      { path: "agent/src/core/pki.ts", text: `import { x509 } from "../../../src/lib/pki/provider.js";` },
      { path: "src/modules/agent/enroll.ts", text: `import type { DeviceSession } from "../../../agent/src/core/session.js";` },
      { path: "src/simulator/virtual-device.ts", text: `import { DeviceSession } from "../../agent/src/core/session.js";` },
      { path: "agent/src/agent.ts", text: `import { DeploymentAgent } from "./core/deployments.js";` },
      { path: "agent/src/core/service-client.ts", text: `import type { AppRouter } from "../../../src/trpc/router.js";` },
      { path: "agent/src/core/other.ts", text: `import type { AppRouter } from "../../../src/trpc/router.js";\nimport { appRouter } from "../../../src/trpc/router.js";` },
      { path: "agent/src/core/dynamic.ts", text: `const { appRouter } = await import("../../../src/trpc/router.js");` },
    ])).toEqual([
      `agent/src/core/pki.ts imports "../../../src/lib/pki/provider.js" (src/lib/pki/provider.js): agent/ imports nothing of the service: a device runs none of its code`,
      `src/modules/agent/enroll.ts imports "../../../agent/src/core/session.js" (agent/src/core/session.js): the service imports nothing of agent/`,
      `agent/src/core/other.ts imports "../../../src/trpc/router.js" (src/trpc/router.js): agent/ imports nothing of the service: a device runs none of its code`,
      `agent/src/core/other.ts imports "../../../src/trpc/router.js" (src/trpc/router.js): agent/ imports nothing of the service: a device runs none of its code`,
      `agent/src/core/dynamic.ts imports "../../../src/trpc/router.js" (src/trpc/router.js): agent/ imports nothing of the service: a device runs none of its code`,
    ]);
  });

  it("name the file and the import of each kind of violation", () => {
    const violations = importViolations([
      { path: "src/trpc/auth.ts", text: `import { endSwitch } from "../modules/tenant/lifecycle.js";` },
      { path: "src/trpc/procedures.ts", text: `import type { Limit } from "../http/rate-limit.js";` },
      { path: "src/trpc/nested/deep.ts", text: `export * from "../../modules/devices/service.js";` },
      { path: "src/http/log-stream.ts", text: `const logs = await import("../modules/logs/service.js");` },
    ]);
    expect(violations).toEqual([
      `src/trpc/auth.ts imports "../modules/tenant/lifecycle.js" (src/modules/tenant/lifecycle.js): src/trpc imports no domain module (only src/trpc/router.ts assembles their routers)`,
      `src/trpc/procedures.ts imports "../http/rate-limit.js" (src/http/rate-limit.js): src/trpc imports nothing of src/http`,
      `src/trpc/nested/deep.ts imports "../../modules/devices/service.js" (src/modules/devices/service.js): src/trpc imports no domain module (only src/trpc/router.ts assembles their routers)`,
      `src/http/log-stream.ts imports "../modules/logs/service.js" (src/modules/logs/service.js): src/http imports no domain module (only src/http/routes.ts mounts their plain routes)`,
    ]);
  });

  it("allow the mount files, imports of src/trpc from src/http, and imports in comments", () => {
    expect(importViolations([
      { path: "src/trpc/router.ts", text: `import { devicesRouter } from "../modules/devices/router.js";` },
      { path: "src/http/routes.ts", text: `import { pkiRoutes } from "../modules/ca-certificates/download-routes.js";` },
      { path: "src/http/guarded-route.ts", text: `import { authenticateRequest } from "../trpc/procedures.js";\n// not: import "../modules/x.js"` },
      { path: "src/modules/logs/stream-route.ts", text: `import { authorizeRequest } from "../../http/guarded-route.js";` },
    ])).toEqual([]);
  });
});
