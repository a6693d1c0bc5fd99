// What the CA page says about a CA and offers to do with it, from the API's own answer: its
// expiry as time left (a warning inside 30 days), whether it is in service, and which moves the
// service would accept (the same rules as src/modules/ca-certificates/service.ts: a retired CA
// is neither renewed nor made the default; only a CA that can sign now becomes the default; only
// a self-signed root is renewed; the default is not deleted).
import type { RouterOutputs } from "../api/client";
import { counted } from "../../../src/lib/plural";

export type CaCertificate = RouterOutputs["caCertificates"]["list"]["items"][number];

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Inside this window an expiry is a warning (the same 30 days as the expiring device certificates). */
export const EXPIRY_WARNING_DAYS = 30;

export type ExpiryTone = "ok" | "warning" | "expired";

export interface Expiry {
  /** "9 years left", "12 days left", "expired 3 days ago" */
  text: string;
  tone: ExpiryTone;
}

/** A span of time in the largest unit that still reads precisely enough ("3 days", "11 months"). */
function span(ms: number): string {
  if (ms < HOUR) return counted(Math.max(1, Math.floor(ms / MINUTE)), "minute");
  if (ms < 2 * DAY) return counted(Math.floor(ms / HOUR), "hour");
  if (ms < 60 * DAY) return counted(Math.floor(ms / DAY), "day");
  if (ms < 730 * DAY) return counted(Math.floor(ms / (30 * DAY)), "month");
  return counted(Math.floor(ms / (365 * DAY)), "year");
}

/** The time left before `notAfter`, rounded down (never more than is left), and its tone. */
export function expiryOf(notAfter: string, now: number): Expiry {
  const left = Date.parse(notAfter) - now;
  if (left <= 0) return { text: `expired ${span(-left)} ago`, tone: "expired" };
  return { text: `${span(left)} left`, tone: left < EXPIRY_WARNING_DAYS * DAY ? "warning" : "ok" };
}

export type CaState = "default" | "in service" | "retired" | "expired" | "not yet valid" | "trust only";

/** The CA's state in one word, most important first (a retired CA is "retired" even when expired). */
export function caStateOf(ca: CaCertificate, now: number): CaState {
  if (ca.retiredAt) return "retired";
  if (Date.parse(ca.notAfter) <= now) return "expired";
  if (Date.parse(ca.notBefore) > now) return "not yet valid";
  if (!ca.hasPrivateKey) return "trust only";
  return ca.isDefault ? "default" : "in service";
}

export interface CaMoves {
  setDefault: boolean;
  renew: boolean;
  retire: boolean;
  delete: boolean;
  /** a revocation list needs the CA's key to be signed */
  crl: boolean;
}

/** The moves the service accepts for this CA now (permissions are the page's business). */
export function movesOf(ca: CaCertificate, now: number): CaMoves {
  const state = caStateOf(ca, now);
  return {
    setDefault: state === "in service",
    renew: !ca.retiredAt && ca.hasPrivateKey && ca.isRoot,
    retire: !ca.retiredAt,
    delete: !ca.isDefault,
    crl: ca.hasPrivateKey,
  };
}

export type UploadField = "name" | "certificatePem" | "privateKeyPem";

/**
 * Which field of the upload form a refusal of the service is about, so that its message shows
 * next to that field: the input validation names the field (`issues[].path`), the PKI checks
 * name the part they read ("private key does not match the certificate", "certificate chain is
 * broken: ..."), and a name already taken is a conflict about the name. Null: about no field.
 */
export function uploadFieldOf(message: string, issuePath?: readonly (string | number)[]): UploadField | null {
  const named = issuePath?.[0];
  if (named === "name" || named === "certificatePem" || named === "privateKeyPem") return named;
  if (/^A CA certificate named /.test(message)) return "name";
  if (/private key/i.test(message)) return "privateKeyPem";
  if (/certificate|chain|PEM/i.test(message)) return "certificatePem";
  return null;
}
