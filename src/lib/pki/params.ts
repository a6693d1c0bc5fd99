/**
 * Validation and date arithmetic shared by the certificate builders.
 * Values here usually come straight from API requests, hence PkiInputError.
 */
import { randomBytes } from "node:crypto";
import { PkiInputError } from "./errors.js";

/** Devices' clocks drift: certificates start this long before "now". */
export const CLOCK_SKEW_MS = 5 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;
/** 100 years: far beyond any sane CA lifetime, and keeps dates encodable. */
export const MAX_VALIDITY_DAYS = 36_500;
/** X.520 upper bound for a common name. */
export const MAX_COMMON_NAME_LENGTH = 64;

export function resolveNow(now: Date | undefined): Date {
  const value = now ?? new Date();
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw new PkiInputError("now must be a valid Date");
  }
  return value;
}

export function checkValidityDays(days: unknown): number {
  if (typeof days !== "number" || !Number.isInteger(days) || days < 1 || days > MAX_VALIDITY_DAYS) {
    throw new PkiInputError(`validityDays must be an integer between 1 and ${MAX_VALIDITY_DAYS}`);
  }
  return days;
}

/** A name that ends up as a certificate CN: 1-64 characters, no control characters. */
export function checkCommonName(value: unknown, what: string): string {
  const text = typeof value === "string" ? value.trim() : "";
  if (text === "") throw new PkiInputError(`${what} is required`);
  if (text.length > MAX_COMMON_NAME_LENGTH) {
    throw new PkiInputError(`${what} must be at most ${MAX_COMMON_NAME_LENGTH} characters`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(text)) throw new PkiInputError(`${what} must not contain control characters`);
  return text;
}

/** X.509 times have one-second resolution; truncate so returned dates equal encoded ones. */
export function floorToSecond(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

export function addDays(date: Date, days: number): Date {
  return new Date(date.getTime() + days * DAY_MS);
}

/** Validity window for a new certificate: backdated for clock skew, seconds resolution. */
export function validityWindow(now: Date, validityDays: number): { notBefore: Date; notAfter: Date } {
  return {
    notBefore: floorToSecond(new Date(now.getTime() - CLOCK_SKEW_MS)),
    notAfter: floorToSecond(addDays(now, validityDays)),
  };
}

/**
 * A fresh serial number as hex: 16 random bytes with the top bit cleared
 * (serials must be positive) and the next bit set (so the DER INTEGER is
 * always exactly 16 bytes: no sign padding, no leading zero). That leaves
 * 126 random bits, well above the 64 bits the CA/Browser Forum asks for.
 */
export function randomSerialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] ?? 0) & 0x7f) | 0x40;
  return bytes.toString("hex");
}
