/**
 * Builds the bare repositories the test git server exports, with the git CLI: each repository
 * has a private work tree where commits are made and then pushed to the bare repository.
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, posix } from "node:path";
import { runGit } from "./git-cli.js";

export type RepoFiles = Record<string, string | Buffer>;

export interface CreateRepoOptions {
  /** Branch of the first commit, and the repository's HEAD. Default "main". */
  branch?: string;
  message?: string;
}

export interface CommitOptions {
  /** Files (or folders) to delete in this commit. */
  remove?: string[];
  /** Branch to commit on; created from the default branch when new. Default: the default branch. */
  branch?: string;
  message?: string;
}

interface KnownRepo {
  bareDir: string;
  workDir: string;
  defaultBranch: string;
  /** Operations on one repository run one after another (git locks its index). */
  queue: Promise<unknown>;
}

/** Committer identity of every test commit; .invalid never reaches anyone. */
const AUTHOR = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"];
const REPO_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

export class RepositoryStore {
  private readonly repos = new Map<string, KnownRepo>();

  constructor(
    /** GIT_PROJECT_ROOT of the server: bare repositories live at <root>/<name>.git */
    private readonly projectRoot: string,
    private readonly workRoot: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Creates <name>.git with one commit of `files`; returns its path below the server root. */
  create(name: string, files: RepoFiles, options: CreateRepoOptions = {}): Promise<{ urlPath: string; commit: string }> {
    const repoName = normalizeRepoName(name);
    if (this.repos.has(repoName)) throw new Error(`test git server: repository "${repoName}" already exists`);
    const branch = options.branch ?? "main";
    const repo: KnownRepo = {
      bareDir: join(this.projectRoot, `${repoName}.git`),
      workDir: join(this.workRoot, repoName),
      defaultBranch: branch,
      queue: Promise.resolve(),
    };
    this.repos.set(repoName, repo);

    const created = (async () => {
      const work = { cwd: repo.workDir, env: this.env };
      await mkdir(repo.workDir, { recursive: true });
      await runGit(["init", "-q", "-b", branch], work);
      const commit = await this.commitAndPush(repo, branch, files, [], options.message ?? "initial commit");
      await runGit(["-C", repo.bareDir, "symbolic-ref", "HEAD", `refs/heads/${branch}`], { env: this.env });
      // Read-only is all the tests need: clients may fetch, never push.
      await runGit(["-C", repo.bareDir, "config", "http.receivepack", "false"], { env: this.env });
      return { urlPath: `/${repoName}.git`, commit };
    })();
    repo.queue = created.catch(() => {});
    return created;
  }

  /** Adds a commit (files written, `remove` deleted) and pushes it; returns the new commit id. */
  commit(name: string, files: RepoFiles, options: CommitOptions = {}): Promise<{ commit: string }> {
    const repoName = normalizeRepoName(name);
    const repo = this.repos.get(repoName);
    if (!repo) return Promise.reject(new Error(`test git server: no repository "${repoName}"`));
    const next = repo.queue.then(async () => {
      const branch = options.branch ?? repo.defaultBranch;
      await this.checkout(repo, branch);
      const commit = await this.commitAndPush(repo, branch, files, options.remove ?? [], options.message ?? "update");
      return { commit };
    });
    repo.queue = next.catch(() => {});
    return next;
  }

  private async checkout(repo: KnownRepo, branch: string): Promise<void> {
    const work = { cwd: repo.workDir, env: this.env };
    const exists = await runGit(["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], work).then(
      () => true,
      () => false,
    );
    if (exists) await runGit(["checkout", "-q", branch], work);
    else await runGit(["checkout", "-q", "-b", branch, repo.defaultBranch], work);
  }

  private async commitAndPush(
    repo: KnownRepo,
    branch: string,
    files: RepoFiles,
    remove: string[],
    message: string,
  ): Promise<string> {
    const work = { cwd: repo.workDir, env: this.env };
    for (const path of remove) {
      await runGit(["rm", "-q", "-r", "--ignore-unmatch", "--", safeRelativePath(path)], work);
    }
    for (const [path, content] of Object.entries(files)) {
      const target = join(repo.workDir, safeRelativePath(path));
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, content);
    }
    await runGit(["add", "-A"], work);
    await runGit([...AUTHOR, "commit", "-q", "--allow-empty", "-m", message], work);

    await mkdir(repo.bareDir, { recursive: true });
    await runGit(["init", "-q", "--bare", repo.bareDir], { env: this.env }); // no-op once it exists
    await runGit(["push", "-q", repo.bareDir, `${branch}:refs/heads/${branch}`], work);
    return (await runGit(["rev-parse", "HEAD"], work)).trim();
  }

  async removeAll(): Promise<void> {
    await Promise.all([...this.repos.values()].map((repo) => repo.queue));
    this.repos.clear();
    await rm(this.workRoot, { recursive: true, force: true });
  }
}

function normalizeRepoName(name: string): string {
  const bare = name.replace(/\.git$/, "");
  if (!REPO_NAME_PATTERN.test(bare)) {
    throw new Error(`test git server: invalid repository name "${name}"`);
  }
  return bare;
}

/** File paths in a test repository stay inside its work tree. */
function safeRelativePath(path: string): string {
  const normalized = posix.normalize(path);
  if (path.startsWith("/") || normalized === "." || normalized.startsWith("../") || normalized === "..") {
    throw new Error(`test git server: file path "${path}" leaves the repository`);
  }
  return normalized;
}
