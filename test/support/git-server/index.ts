/**
 * A real Git smart-HTTP server for tests: `git http-backend` (from the installed git) run as
 * CGI behind node:http on 127.0.0.1, serving bare repositories the test builds with the git
 * CLI. Read-only (no push), optionally behind HTTP Basic authentication.
 *
 *   const server = await startGitServer({ auth: { username: "u", password: "p" } });
 *   const { url, commit } = await server.createRepo("apps", { "app.yaml": "..." });
 *   ... clone url ...
 *   await server.close();
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serveCgi } from "./cgi.js";
import { gitExecPath, isolatedGitEnv } from "./git-cli.js";
import { RepositoryStore } from "./repositories.js";
import type { CommitOptions, CreateRepoOptions, RepoFiles } from "./repositories.js";
import { applyConnectionTimeouts } from "../../../src/lib/http-timeouts.js";

export type { CommitOptions, CreateRepoOptions, RepoFiles } from "./repositories.js";

export interface GitServerOptions {
  /** When set, every request needs these HTTP Basic credentials (else 401). */
  auth?: { username: string; password: string };
  /** the port on 127.0.0.1 (default: any free one) */
  port?: number;
}

export interface GitServer {
  /** http://127.0.0.1:PORT */
  url: string;
  /** Creates <name>.git with one commit; `url` is its clone URL. */
  createRepo(name: string, files: RepoFiles, opts?: CreateRepoOptions): Promise<{ url: string; commit: string }>;
  /** Adds a commit to an existing repository. */
  commit(name: string, files: RepoFiles, opts?: CommitOptions): Promise<{ commit: string }>;
  /** Stops the server and its CGI processes and deletes every repository. */
  close(): Promise<void>;
}

export async function startGitServer(options: GitServerOptions = {}): Promise<GitServer> {
  const baseDir = await mkdtemp(join(tmpdir(), "fleet-git-server-"));
  const projectRoot = join(baseDir, "repositories");
  const home = join(baseDir, "home");
  await Promise.all([mkdir(projectRoot), mkdir(home)]);
  const gitEnv = isolatedGitEnv(home);
  const httpBackend = join(await gitExecPath(gitEnv), "git-http-backend");
  const repositories = new RepositoryStore(projectRoot, join(baseDir, "work"), gitEnv);
  const running = new Set<ChildProcess>();

  const cgiEnv: NodeJS.ProcessEnv = { ...gitEnv, GIT_PROJECT_ROOT: projectRoot, GIT_HTTP_EXPORT_ALL: "1" };
  const server = createServer((request, response) => {
    const user = authenticate(request, options.auth);
    if (user === null) {
      response.writeHead(401, { "WWW-Authenticate": 'Basic realm="git"', "Content-Type": "text/plain" });
      response.end("authentication required\n");
      return;
    }
    serveCgi(request, response, {
      program: httpBackend,
      env: cgiEnv,
      running,
      ...(user === undefined ? {} : { remoteUser: user }),
    }).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { "Content-Type": "text/plain" });
      response.end(`test git server failed: ${String(error)}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    applyConnectionTimeouts(server); // as the service sets them: the service, its client, closes idle sockets first
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    async createRepo(name, files, opts) {
      const created = await repositories.create(name, files, opts);
      return { url: `${url}${created.urlPath}`, commit: created.commit };
    },
    commit: (name, files, opts) => repositories.commit(name, files, opts),
    async close() {
      for (const child of running) child.kill("SIGKILL");
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await repositories.removeAll().catch(() => {});
      await rm(baseDir, { recursive: true, force: true });
    },
  };
}

/**
 * undefined: no authentication configured; null: refused; otherwise the user name.
 * Hashing both sides first gives equal-length buffers for the constant-time comparison.
 */
function authenticate(request: IncomingMessage, auth: GitServerOptions["auth"]): string | undefined | null {
  if (!auth) return undefined;
  const header = request.headers.authorization ?? "";
  const match = /^Basic\s+(.+)$/i.exec(header);
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return null;
  const username = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  const usernameOk = sameSecret(username, auth.username);
  const passwordOk = sameSecret(password, auth.password);
  return usernameOk && passwordOk ? username : null;
}

function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();
  return timingSafeEqual(digest(given), digest(expected));
}
