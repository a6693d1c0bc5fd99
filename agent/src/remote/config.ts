// The device's own word on remote access (docs/remote-access.md, "The agent's switches"): the
// `remoteAccess` section of the agent's configuration file (YAML or JSON; --config FILE,
// FLEET_AGENT_CONFIG, default /etc/fleet-agent/config.yaml; no file: the defaults below). The
// organization's setting turns remote access on for a device; this file can only say no (a
// kind, a target, a path), and it always wins: the agent refuses the session.
import fs from "node:fs";
import YAML from "yaml";

export interface PortForwardConfig {
  enabled: boolean;
  /** "host:port" patterns; port `*`, a number or a range `8000-8099`; host a name or address as the operator writes it, or `*` */
  allow: string[];
}

export interface FilesConfig {
  read: boolean;
  write: boolean;
  /** directories a file copy may read or write below (symlinks and `..` resolved first) */
  roots: string[];
  /** the largest file copied either way */
  maxBytes: number;
}

export interface RemoteAccessConfig {
  enabled: boolean;
  shell: boolean;
  exec: boolean;
  portForward: PortForwardConfig;
  files: FilesConfig;
  /** whom shells and commands run as when the agent is root */
  user: string;
}

export const DEFAULT_CONFIG_FILE = "/etc/fleet-agent/config.yaml";

export function defaultRemoteAccess(): RemoteAccessConfig {
  return {
    enabled: true,
    shell: true,
    exec: true,
    portForward: { enabled: true, allow: ["127.0.0.1:*", "localhost:*", "[::1]:*"] },
    files: { read: true, write: true, roots: ["/var/log", "/tmp"], maxBytes: 1024 * 1024 * 1024 },
    user: "fleet-remote",
  };
}

export class ConfigError extends Error {}

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function only(value: Obj, keys: string[], where: string) {
  for (const key of Object.keys(value)) if (!keys.includes(key)) throw new ConfigError(`${where}.${key}: unknown setting (known: ${keys.join(", ")})`);
}

function bool(value: unknown, fallback: boolean, where: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new ConfigError(`${where}: write true or false`);
  return value;
}

function strings(value: unknown, fallback: string[], where: string, check: (item: string) => string | null): string[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string")) throw new ConfigError(`${where}: a list of strings`);
  for (const item of value as string[]) {
    const problem = check(item);
    if (problem) throw new ConfigError(`${where}: ${JSON.stringify(item)} ${problem}`);
  }
  return value as string[];
}

/** The `remoteAccess` section of a parsed configuration document, checked; names the setting that is wrong. */
export function parseRemoteAccess(document: unknown): RemoteAccessConfig {
  const defaults = defaultRemoteAccess();
  if (document === undefined || document === null) return defaults;
  if (!isObject(document)) throw new ConfigError("the configuration is a mapping (remoteAccess: ...)");
  const section = document.remoteAccess;
  if (section === undefined || section === null) return defaults;
  if (!isObject(section)) throw new ConfigError("remoteAccess: a mapping");
  only(section, ["enabled", "shell", "exec", "portForward", "files", "user"], "remoteAccess");

  const portForward = section.portForward;
  let pf = defaults.portForward;
  if (typeof portForward === "boolean") pf = { ...pf, enabled: portForward };
  else if (isObject(portForward)) {
    only(portForward, ["enabled", "allow"], "remoteAccess.portForward");
    pf = {
      enabled: bool(portForward.enabled, pf.enabled, "remoteAccess.portForward.enabled"),
      allow: strings(portForward.allow, pf.allow, "remoteAccess.portForward.allow", (item) => (parseAllow(item) ? null : "is not host:port (port: a number, a range 8000-8099 or *)")),
    };
  } else if (portForward !== undefined) throw new ConfigError("remoteAccess.portForward: true, false or a mapping");

  const files = section.files;
  let fc = defaults.files;
  if (typeof files === "boolean") fc = { ...fc, read: files, write: files };
  else if (isObject(files)) {
    only(files, ["read", "write", "roots", "maxBytes"], "remoteAccess.files");
    const maxBytes = files.maxBytes ?? fc.maxBytes;
    if (!Number.isSafeInteger(maxBytes) || (maxBytes as number) <= 0) throw new ConfigError("remoteAccess.files.maxBytes: a positive whole number of bytes");
    fc = {
      read: bool(files.read, fc.read, "remoteAccess.files.read"),
      write: bool(files.write, fc.write, "remoteAccess.files.write"),
      roots: strings(files.roots, fc.roots, "remoteAccess.files.roots", (item) => (item.startsWith("/") ? null : "is not an absolute path")),
      maxBytes: maxBytes as number,
    };
  } else if (files !== undefined) throw new ConfigError("remoteAccess.files: true, false or a mapping");

  const user = section.user ?? defaults.user;
  if (typeof user !== "string" || !/^[a-z_][a-z0-9_.-]*\$?$/i.test(user)) throw new ConfigError("remoteAccess.user: a user name");
  return {
    enabled: bool(section.enabled, defaults.enabled, "remoteAccess.enabled"),
    shell: bool(section.shell, defaults.shell, "remoteAccess.shell"),
    exec: bool(section.exec, defaults.exec, "remoteAccess.exec"),
    portForward: pf,
    files: fc,
    user,
  };
}

/** Reads the configuration file; a missing file (at the default place) means the defaults. */
export function loadRemoteAccess(file: string | undefined): RemoteAccessConfig {
  const path = file ?? DEFAULT_CONFIG_FILE;
  let text: string;
  try {
    text = fs.readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT" && file === undefined) return defaultRemoteAccess();
    throw new ConfigError(`${path}: ${(error as Error).message}`);
  }
  let document: unknown;
  try {
    document = YAML.parse(text);
  } catch (error) {
    throw new ConfigError(`${path}: not YAML (${(error as Error).message.split("\n")[0]})`);
  }
  try {
    return parseRemoteAccess(document);
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message}`);
  }
}

export interface AllowRule {
  host: string;
  from: number;
  to: number;
}

/** "host:port", "[v6]:port", port `*` or `a-b`; null when it is none of those. */
export function parseAllow(rule: string): AllowRule | null {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\*|\d{1,5}(?:-\d{1,5})?)$/.exec(rule.trim());
  if (!match) return null;
  const host = match[1].replace(/^\[|\]$/g, "").toLowerCase();
  if (match[2] === "*") return { host, from: 1, to: 65535 };
  const [from, to = from] = match[2].split("-").map(Number);
  if (from < 1 || to > 65535 || from > to) return null;
  return { host, from, to };
}

/** The rule that lets `host:port` through, or null. */
export function allowedTarget(allow: string[], host: string, port: number): string | null {
  const wanted = host.replace(/^\[|\]$/g, "").toLowerCase();
  for (const rule of allow) {
    const parsed = parseAllow(rule);
    if (parsed && (parsed.host === "*" || parsed.host === wanted) && port >= parsed.from && port <= parsed.to) return rule;
  }
  return null;
}
