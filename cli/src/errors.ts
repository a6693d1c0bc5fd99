// Exit codes: one per class of failure a script tells apart (docs/cli.md, "Exit codes").
export const EXIT = {
  ok: 0,
  /** anything not below */
  error: 1,
  /** the command line was wrong, or the API refused the input (400, naming the field) */
  usage: 2,
  /** not signed in, or the credential was refused (401) */
  auth: 3,
  /** signed in, but not allowed (403) */
  permission: 4,
  /** no such resource (404; another organization's resource is a 404 too) */
  notFound: 5,
  /** the resource's state or a unique name forbids it (409) */
  conflict: 6,
  /** the server failed (5xx), could not be reached, or asked to retry later (429) */
  server: 7,
  /** a rollout followed with --wait (or watched) paused, failed or was aborted */
  rolloutFailed: 8,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export interface ApiIssue {
  path: string[];
  message: string;
}

/** A failure the CLI reports on stderr and exits with. */
export class CliError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    readonly details: { status?: number; code?: string; requestId?: string; issues?: ApiIssue[] } = {},
  ) {
    super(message);
  }
}

export function exitCodeOfStatus(status: number): ExitCode {
  if (status === 400 || status === 422) return EXIT.usage;
  if (status === 401) return EXIT.auth;
  if (status === 403) return EXIT.permission;
  if (status === 404) return EXIT.notFound;
  if (status === 409) return EXIT.conflict;
  if (status === 429 || status >= 500) return EXIT.server;
  return EXIT.error;
}

/** The lines written to stderr for an error: the API's message, each invalid field, the request id. */
export function errorLines(err: CliError): string[] {
  const lines = [`error: ${err.message}`];
  for (const issue of err.details.issues ?? []) lines.push(`  field ${issue.path.join(".") || "(input)"}: ${issue.message}`);
  if (err.details.status) lines.push(`  (HTTP ${err.details.status}${err.details.code ? ` ${err.details.code}` : ""}${err.details.requestId ? `, request ${err.details.requestId}` : ""})`);
  return lines;
}
