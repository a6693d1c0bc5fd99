// Whom a session's processes run as (docs/remote-access.md, "On the device"): when the agent is
// root, the configured unprivileged user (default fleet-remote), switched to by the spawn itself
// (setgid, setgroups to none, setuid: libuv does it between fork and exec); never sudo, never a
// password. When the agent is not root it cannot switch: its own user.
import fs from "node:fs";
import os from "node:os";

export interface RunAs {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
  /** set when the spawn must switch to it (the agent is root and the user is another) */
  switchTo: { uid: number; gid: number } | null;
}

export class RunAsError extends Error {}

const NO_LOGIN = /(nologin|false)$/;

/** The passwd entry of `name` (null: no such user). */
export function passwdEntry(name: string, passwdFile = "/etc/passwd"): { uid: number; gid: number; home: string; shell: string } | null {
  for (const line of fs.readFileSync(passwdFile, "utf8").split("\n")) {
    const [user, , uid, gid, , home, shell] = line.split(":");
    if (user === name && uid !== undefined) return { uid: Number(uid), gid: Number(gid), home: home || "/", shell: shell || "" };
  }
  return null;
}

/** A login shell that exists: the user's own, else bash, else sh (a system user's nologin opens no shell). */
function usableShell(shell: string): string {
  if (shell && !NO_LOGIN.test(shell) && fs.existsSync(shell)) return shell;
  return fs.existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh";
}

export function resolveRunAs(configured: string): RunAs {
  const uid = process.getuid?.() ?? 0;
  if (uid !== 0) {
    const me = os.userInfo();
    return { name: me.username, uid, gid: process.getgid?.() ?? me.gid, home: me.homedir, shell: usableShell(me.shell ?? ""), switchTo: null };
  }
  const entry = passwdEntry(configured);
  if (!entry) {
    throw new RunAsError(`the user ${configured} (remoteAccess.user) does not exist on the device; create it (useradd --system --create-home --shell /bin/bash ${configured}) or name another`);
  }
  return {
    name: configured, uid: entry.uid, gid: entry.gid, home: entry.home, shell: usableShell(entry.shell),
    switchTo: entry.uid === 0 ? null : { uid: entry.uid, gid: entry.gid },
  };
}

/** The environment of a session's processes: the user's, not the agent's (no FLEET_* or service address leaks in). */
export function sessionEnv(user: RunAs, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    HOME: user.home,
    USER: user.name,
    LOGNAME: user.name,
    SHELL: user.shell,
    PATH: user.uid === 0 ? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" : "/usr/local/bin:/usr/bin:/bin",
    LANG: process.env.LANG ?? "C.UTF-8",
    ...extra,
  };
}

/** The working directory: the user's home when it exists, else /. */
export function sessionCwd(user: RunAs): string {
  try {
    return fs.statSync(user.home).isDirectory() ? user.home : "/";
  } catch {
    return "/";
  }
}
