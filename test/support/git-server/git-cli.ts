/**
 * Runs the installed git CLI for the test git server, isolated from the machine's and the
 * caller's git configuration (a test run inside a git hook inherits GIT_DIR, for instance).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** Environment for every git process we start: no system/global config, never a prompt. */
export function isolatedGitEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    LANG: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_TERMINAL_PROMPT: "0",
  };
}

export async function runGit(args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }): Promise<string> {
  try {
    const { stdout } = await execFileAsync("git", args, { ...options, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`git ${args.join(" ")} failed: ${stderr.trim() || String(error)}`);
  }
}

/** Where git keeps its helper programs, git-http-backend among them. */
export async function gitExecPath(env: NodeJS.ProcessEnv): Promise<string> {
  return (await runGit(["--exec-path"], { env })).trim();
}
