// Secret leak checks for every test file that uses the harness (the whole suite, not one
// scenario): the harness records each secret a test sends or receives through `h.api`, and
// the secrets it makes itself, and `h.close()` fails the file when
// * any log line of the service holds any of them, or
// * a response holds a password, credential, private key or signing secret that a request
//   sent (the service keeps those; it never shows them back).
// A secret the service generates (API keys, tokens, tickets) is expected in the one response
// that creates it; test/http/security/secrets.test.ts checks that it appears in no other.

/** Request fields whose values are secrets the caller hands over and never gets back. */
const KEPT_SECRET_FIELD = /password|credential|secret|private_?key|privatekey/i;
/** Fields of any body, sent or answered, whose values are secrets. */
const SECRET_FIELD = /password|credential|secret|private_?key|privatekey|token|^key$|apikey|ticket/i;
/** Fields that name, count or point at a secret rather than hold it (tokenPrefix, apiKeyId, credential.username). */
const NOT_SECRET_FIELD = /(id|ids|prefix|at|name|names|user|email|count|type|status|url|uri|path|hash|fingerprint|algorithm|kind|scopes?|method|permissions)$/i;
/** Shorter values are not distinctive enough to find by substring (and are not real secrets). */
const MIN_LENGTH = 12;
/**
 * Whether a value under a secret field is one: long enough, and not a word that merely sits
 * under such a field ({ token: { scope: "organization" } }): 16 characters or more, or 12
 * with both letters and digits.
 */
const looksSecret = (v: string) => v.length >= 16 || (v.length >= MIN_LENGTH && /\d/.test(v) && /[a-z]/i.test(v));

function collect(value: unknown, into: Set<string>, field: RegExp, underSecret = false, depth = 0): void {
  if (depth > 20 || value === null || value === undefined) return;
  if (typeof value === "string") {
    if (underSecret && looksSecret(value)) into.add(value);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collect(item, into, field, underSecret, depth + 1);
    return;
  }
  if (typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      collect(v, into, field, !NOT_SECRET_FIELD.test(k) && (underSecret || field.test(k)), depth + 1);
    }
  }
}

function bearerOf(headers: Record<string, string>): string | null {
  const auth = Object.entries(headers).find(([k]) => k.toLowerCase() === "authorization")?.[1];
  return auth?.startsWith("Bearer ") ? auth.slice(7) : null;
}

/** A short, unusable reference to a secret for failure messages. */
const hint = (secret: string) => `${secret.slice(0, 4)}… (${secret.length} chars)`;

export class SecretWatch {
  /** every secret seen: must appear in no log line */
  private readonly all = new Set<string>();
  /** secrets handed over by requests: must appear in no response */
  private readonly kept = new Set<string>();
  private readonly violations: string[] = [];

  constructor(known: string[]) {
    for (const s of known) this.all.add(s);
  }

  /** A secret the test made itself (an API key inserted directly, a password it set). */
  add(secret: string) {
    if (secret.length >= MIN_LENGTH) this.all.add(secret);
  }

  /** Records what one request sent (body, API key, bearer token). */
  sent(label: string, body: unknown, headers: Record<string, string>) {
    collect(body, this.kept, KEPT_SECRET_FIELD);
    collect(body, this.all, SECRET_FIELD);
    const key = Object.entries(headers).find(([k]) => k.toLowerCase() === "x-api-key")?.[1];
    if (key) this.add(key);
    const bearer = bearerOf(headers);
    if (bearer) this.add(bearer);
    void label;
  }

  /** Checks one response against the kept secrets, then records the secrets it carries. */
  answered(label: string, text: string, headers: Headers, parsed: unknown) {
    const everything = `${text}\n${[...headers].map(([k, v]) => `${k}: ${v}`).join("\n")}`;
    for (const secret of this.kept) {
      if (everything.includes(secret)) this.violations.push(`${label}: the response shows a secret a request sent (${hint(secret)})`);
    }
    collect(parsed, this.all, SECRET_FIELD);
  }

  /** The leaks found, the log lines included; empty when there are none. */
  check(logs: string[]): string[] {
    const found = [...this.violations];
    for (const secret of this.all) {
      const line = logs.findIndex((l) => l.includes(secret));
      if (line >= 0) found.push(`log line ${line + 1} holds a secret (${hint(secret)}): ${logs[line].slice(0, 200).replaceAll(secret, "<secret>")}`);
    }
    return found;
  }
}
