// The caller's own profile, notification preferences and sessions.
import { z } from "zod";

export const profileOutput = z.object({
  id: z.string().uuid(),
  email: z.string(),
  name: z.string(),
  status: z.string(),
  isSuperAdmin: z.boolean(),
  emailVerified: z.boolean(),
  hasPassword: z.boolean().describe("false for accounts that only sign in through the identity provider"),
  federatedIdentity: z.object({ issuer: z.string(), subject: z.string() }).nullable(),
  organization: z.object({ id: z.string().uuid(), name: z.string(), slug: z.string() }).describe("the organization requests act in"),
  role: z.string().nullable(),
  lastLoginAt: z.string().datetime().nullable(),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});

export const updateProfileInput = z.object({
  name: z.string().trim().min(1).max(200).optional(),
  email: z.string().trim().toLowerCase().email().max(320).optional().describe("needs currentPassword when the account has a password; the new address is unverified"),
  currentPassword: z.string().min(1).max(1024).optional(),
});

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, "HH:MM");

/** Stored in User.notificationPreferences; every field has a default so a partial document reads whole. */
export const notificationPreferences = z.object({
  email: z.boolean().pipe(z.boolean()).default(true).describe("send notifications by e-mail"),
  inApp: z.boolean().pipe(z.boolean()).default(true),
  categories: z.object({
    alerts: z.boolean().pipe(z.boolean()).default(true),
    deployments: z.boolean().pipe(z.boolean()).default(true),
    devices: z.boolean().pipe(z.boolean()).default(false),
    certificates: z.boolean().pipe(z.boolean()).default(true),
    security: z.boolean().pipe(z.boolean()).default(true).describe("sign-ins, password and session changes"),
  }).prefault({}),
  digest: z.enum(["off", "daily", "weekly"]).default("off"),
  quietHours: z.object({ start: hhmm, end: hhmm, timezone: z.string().min(1).max(64).default("UTC") }).nullable().default(null),
});
export type NotificationPreferences = z.infer<typeof notificationPreferences>;

export const changePasswordInput = z.object({
  currentPassword: z.string().min(1).max(1024),
  newPassword: z.string().min(10, "at least 10 characters").max(1024),
});

export const changePasswordOutput = z.object({
  changed: z.literal(true),
  sessionsEnded: z.number().int().describe("other sessions signed out"),
  accessToken: z.string().describe("a new access token for this session: older tokens stopped working"),
  tokenType: z.literal("Bearer"),
  expiresAt: z.string().datetime(),
});

export const sessionOutput = z.object({
  id: z.string().uuid(),
  current: z.boolean(),
  device: z.string().describe("browser and system read from the user agent"),
  userAgent: z.string().nullable(),
  ipAddress: z.string().nullable(),
  organizationId: z.string().uuid().nullable().describe("the organization the session acts in"),
  createdAt: z.string().datetime(),
  lastUsedAt: z.string().datetime(),
  expiresAt: z.string().datetime(),
});

/** "Firefox on Linux", "curl", "Unknown device": enough to recognise one's own sessions. */
export function describeDevice(userAgent: string | null): string {
  if (!userAgent) return "Unknown device";
  const ua = userAgent;
  const browser = /Edg\//.test(ua) ? "Edge" : /OPR\/|Opera/.test(ua) ? "Opera" : /Firefox\//.test(ua) ? "Firefox"
    : /Chrome\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : null;
  const os = /Windows/.test(ua) ? "Windows" : /Android/.test(ua) ? "Android" : /iPhone|iPad|iOS/.test(ua) ? "iOS"
    : /Mac OS X|Macintosh/.test(ua) ? "macOS" : /Linux/.test(ua) ? "Linux" : null;
  if (browser) return os ? `${browser} on ${os}` : browser;
  const tool = /^([A-Za-z][\w.-]*)\//.exec(ua)?.[1];
  return tool ? (os ? `${tool} on ${os}` : tool) : ua.slice(0, 60);
}
