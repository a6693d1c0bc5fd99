// The registry forms' state and the request bodies they become: a credential goes to the API
// only when one was typed (an edit that leaves it empty keeps the stored one; it is never
// shown again), repositories are typed one per line or comma-separated.
import type { RouterInputs } from "../api/client";

export type RegistryKind = "git" | "oci" | "global";
export type AuthType = "NONE" | "BASIC" | "TOKEN";

export interface RegistryForm {
  name: string;
  url: string;
  /** Git only */
  branch: string;
  path: string;
  /** OCI and global only */
  repositories: string;
  description: string;
  verifyTls: boolean;
  /** global only */
  mandatory: boolean;
  priority: string;
  authType: AuthType;
  /** BASIC: username:password; TOKEN: the token */
  credential: string;
  syncIntervalMinutes: string;
}

export const EMPTY_FORM: RegistryForm = {
  name: "", url: "", branch: "main", path: "/", repositories: "", description: "", verifyTls: true, mandatory: false, priority: "0",
  authType: "NONE", credential: "", syncIntervalMinutes: "60",
};

/** A registry as the API answers it, back into the form (the credential stays empty: it is never returned). */
export function formOf(registry: {
  name: string; url: string; branch?: string; path?: string; repositories?: string[]; description?: string | null; verifyTls?: boolean;
  mandatory?: boolean; priority?: number; authType: string; syncIntervalMinutes: number;
}): RegistryForm {
  return {
    ...EMPTY_FORM,
    name: registry.name,
    url: registry.url,
    branch: registry.branch ?? EMPTY_FORM.branch,
    path: registry.path ?? EMPTY_FORM.path,
    repositories: (registry.repositories ?? []).join("\n"),
    description: registry.description ?? "",
    verifyTls: registry.verifyTls ?? true,
    mandatory: registry.mandatory ?? false,
    priority: String(registry.priority ?? 0),
    authType: (["NONE", "BASIC", "TOKEN"].includes(registry.authType) ? registry.authType : "NONE") as AuthType,
    syncIntervalMinutes: String(registry.syncIntervalMinutes),
  };
}

export function parseRepositories(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).map((r) => r.trim()).filter(Boolean))];
}

/** The problems the form can see before asking the API, by field id; the API's own 400 answers the rest. */
export function formProblems(kind: RegistryKind, form: RegistryForm, editing: boolean): Partial<Record<keyof RegistryForm, string>> {
  const problems: Partial<Record<keyof RegistryForm, string>> = {};
  const name = form.name.trim();
  if (name.length < 2 || name.length > 100) problems.name = "Give a name of 2 to 100 characters.";
  try {
    const url = new URL(form.url.trim());
    if (url.protocol !== "http:" && url.protocol !== "https:") problems.url = "Give an http:// or https:// URL.";
    else if (url.username || url.password) problems.url = "Put credentials in the credential field, not in the URL.";
  } catch {
    problems.url = "Give an http:// or https:// URL.";
  }
  const interval = Number(form.syncIntervalMinutes);
  if (form.syncIntervalMinutes.trim() === "" || !Number.isInteger(interval) || interval < 0 || interval > 10_080) {
    problems.syncIntervalMinutes = "Give whole minutes from 0 (manual syncs only) to 10080 (a week).";
  }
  if (kind === "git" && form.branch.trim() === "") problems.branch = "Give a branch.";
  if (kind === "global") {
    const priority = Number(form.priority);
    if (form.priority.trim() === "" || !Number.isInteger(priority) || priority < 0 || priority > 1_000_000) problems.priority = "Give a whole number from 0 to 1000000.";
  }
  // A new registry with authentication needs its credential; an edit may keep the stored one.
  if (form.authType !== "NONE" && !editing && form.credential === "") problems.credential = "Give the credential.";
  if (form.authType === "BASIC" && form.credential !== "" && !form.credential.includes(":")) problems.credential = "Write it as username:password.";
  return problems;
}

type Common = { name: string; url: string; authType: AuthType; syncIntervalMinutes: number; credential?: string };

function commonBody(form: RegistryForm): Common {
  return {
    name: form.name.trim(),
    url: form.url.trim(),
    authType: form.authType,
    syncIntervalMinutes: Number(form.syncIntervalMinutes),
    ...(form.authType !== "NONE" && form.credential !== "" ? { credential: form.credential } : {}),
  };
}

export function gitBody(form: RegistryForm): RouterInputs["registries"]["git"]["create"] {
  return { ...commonBody(form), branch: form.branch.trim(), path: form.path.trim() || "/" };
}

export function ociBody(form: RegistryForm): RouterInputs["registries"]["oci"]["create"] {
  return {
    ...commonBody(form),
    repositories: parseRepositories(form.repositories),
    verifyTls: form.verifyTls,
    ...(form.description.trim() ? { description: form.description.trim() } : {}),
  };
}

export function globalBody(form: RegistryForm): RouterInputs["globalRegistries"]["oci"]["create"] {
  return { ...ociBody(form), mandatory: form.mandatory, priority: Number(form.priority) };
}

/** "850 ms", "4.2 s", "2 min 5 s": a sync's duration. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** "every 60 min", "manual only". */
export function intervalText(minutes: number): string {
  return minutes === 0 ? "manual only" : minutes % 60 === 0 ? `every ${minutes / 60} h` : `every ${minutes} min`;
}
