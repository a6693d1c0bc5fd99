import { mkdtemp, readFile, rm } from "node:fs/promises";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clone, fetch as isoFetch, resolveRef } from "isomorphic-git";
import http from "isomorphic-git/http/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isolatedGitEnv, runGit } from "./git-cli.js";
import { startGitServer } from "./index.js";
import type { GitServer } from "./index.js";

const PNG_BYTES = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0x10]);
const APP_FILES = { "apps/demo/app.yaml": "metadata:\n  id: demo\n", "apps/demo/icon.png": PNG_BYTES, "README.md": "hi\n" };

let scratch: string;
let gitEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "git-server-test-"));
  gitEnv = isolatedGitEnv(scratch);
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

let cloneCount = 0;
function freshDir(): string {
  cloneCount += 1;
  return join(scratch, `clone-${cloneCount}`);
}

/** The git CLI as a client: credential helpers off, so a 401 fails instead of prompting. */
function gitClient(args: string[], cwd?: string): Promise<string> {
  return runGit(["-c", "credential.helper=", ...args], { env: gitEnv, ...(cwd ? { cwd } : {}) });
}

function withCredentials(url: string, username: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = username;
  parsed.password = password;
  return parsed.toString();
}

describe("test git server without authentication", () => {
  let server: GitServer;
  beforeAll(async () => {
    server = await startGitServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it("listens on 127.0.0.1", () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("serves a repository to the git CLI, binary files and HEAD included", async () => {
    const { url, commit } = await server.createRepo("catalog", APP_FILES);
    expect(url).toBe(`${server.url}/catalog.git`);
    expect(commit).toMatch(/^[0-9a-f]{40}$/);

    const dir = freshDir();
    await gitClient(["clone", "-q", url, dir]);
    expect(await readFile(join(dir, "apps/demo/app.yaml"), "utf8")).toBe(APP_FILES["apps/demo/app.yaml"]);
    expect(await readFile(join(dir, "apps/demo/icon.png"))).toEqual(PNG_BYTES);
    expect((await gitClient(["rev-parse", "HEAD"], dir)).trim()).toBe(commit);
    expect((await gitClient(["symbolic-ref", "--short", "HEAD"], dir)).trim()).toBe("main");
  });

  it("follows later commits, removals and other branches", async () => {
    const { url } = await server.createRepo("org/evolving", { "a.txt": "1", "old/b.txt": "2" }, { branch: "trunk" });
    const dir = freshDir();
    await gitClient(["clone", "-q", url, dir]);
    expect((await gitClient(["symbolic-ref", "--short", "HEAD"], dir)).trim()).toBe("trunk");

    const second = await server.commit("org/evolving", { "a.txt": "changed" }, { remove: ["old"] });
    const feature = await server.commit("org/evolving", { "feature.txt": "f" }, { branch: "feature" });
    await gitClient(["fetch", "-q", "origin"], dir);
    expect((await gitClient(["rev-parse", "origin/trunk"], dir)).trim()).toBe(second.commit);
    expect((await gitClient(["rev-parse", "origin/feature"], dir)).trim()).toBe(feature.commit);
    expect(await gitClient(["ls-tree", "-r", "--name-only", "origin/trunk"], dir)).toBe("a.txt\n");
    expect(await gitClient(["ls-tree", "-r", "--name-only", "origin/feature"], dir)).toBe("a.txt\nfeature.txt\n");
  });

  it("serves the git CLI over protocol v0 as well as v2", async () => {
    const { url, commit } = await server.createRepo("protocols", { x: "y" });
    for (const version of ["0", "2"]) {
      const refs = await gitClient(["-c", `protocol.version=${version}`, "ls-remote", url, "refs/heads/main"]);
      expect(refs, `protocol v${version}`).toBe(`${commit}\trefs/heads/main\n`);
    }
  });

  it("passes the Git-Protocol header through to http-backend (protocol v2 advertisement)", async () => {
    const { url } = await server.createRepo("v2", { x: "y" });
    const response = await globalThis.fetch(`${url}/info/refs?service=git-upload-pack`, {
      headers: { "Git-Protocol": "version=2" },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/x-git-upload-pack-advertisement");
    expect(await response.text()).toMatch(/^000eversion 2\n/);
  });

  it("serves isomorphic-git", async () => {
    const { url, commit } = await server.createRepo("iso", APP_FILES);
    const dir = freshDir();
    await clone({ fs, http, dir, url, singleBranch: true });
    expect(await resolveRef({ fs, dir, ref: "HEAD" })).toBe(commit);
    expect(await readFile(join(dir, "apps/demo/icon.png"))).toEqual(PNG_BYTES);

    const next = await server.commit("iso", { "apps/demo/app.yaml": "metadata:\n  id: demo-2\n" });
    const fetched = await isoFetch({ fs, http, dir, url, singleBranch: true, ref: "main" });
    expect(fetched.fetchHead).toBe(next.commit);
  });

  it("answers 404 for an unknown repository", async () => {
    const response = await globalThis.fetch(`${server.url}/missing.git/info/refs?service=git-upload-pack`);
    expect(response.status).toBe(404);
  });

  it("is read-only: a push is refused", async () => {
    const { url } = await server.createRepo("read-only", { x: "1" });
    const dir = freshDir();
    await gitClient(["clone", "-q", url, dir]);
    await runGit(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "x"], {
      cwd: dir,
      env: gitEnv,
    });
    await expect(gitClient(["push", "-q", "origin", "main"], dir)).rejects.toThrow(/403|not permitted|denied/i);
  });

  it("refuses repository names and file paths that leave its folders", async () => {
    await expect(server.createRepo("../evil", {})).rejects.toThrow(/invalid repository name/);
    await expect(server.createRepo("escape", { "../outside.txt": "x" })).rejects.toThrow(/leaves the repository/);
  });
});

describe("test git server with Basic authentication", () => {
  const auth = { username: "reader", password: "s3cret" };
  let server: GitServer;
  let repoUrl: string;
  let repoCommit: string;
  beforeAll(async () => {
    server = await startGitServer({ auth });
    ({ url: repoUrl, commit: repoCommit } = await server.createRepo("private", APP_FILES));
  });
  afterAll(async () => {
    await server.close();
  });

  it("asks for credentials with 401 and a Basic challenge", async () => {
    const response = await globalThis.fetch(`${repoUrl}/info/refs?service=git-upload-pack`);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe('Basic realm="git"');
  });

  it("lets the git CLI clone with the right credentials", async () => {
    const dir = freshDir();
    await gitClient(["clone", "-q", withCredentials(repoUrl, auth.username, auth.password), dir]);
    expect((await gitClient(["rev-parse", "HEAD"], dir)).trim()).toBe(repoCommit);
  });

  it("refuses the git CLI without credentials or with a wrong password", async () => {
    await expect(gitClient(["clone", "-q", repoUrl, freshDir()])).rejects.toThrow(/could not read Username/);
    await expect(gitClient(["clone", "-q", withCredentials(repoUrl, auth.username, "wrong"), freshDir()])).rejects.toThrow(
      /Authentication failed/,
    );
  });

  it("lets isomorphic-git clone with the right credentials", async () => {
    const dir = freshDir();
    await clone({ fs, http, dir, url: repoUrl, onAuth: () => auth });
    expect(await resolveRef({ fs, dir, ref: "HEAD" })).toBe(repoCommit);
  });

  it("refuses isomorphic-git with a wrong password", async () => {
    const attempt = clone({ fs, http, dir: freshDir(), url: repoUrl, onAuth: () => ({ ...auth, password: "wrong" }) });
    await expect(attempt).rejects.toMatchObject({ code: "HttpError", data: { statusCode: 401 } });
  });
});
