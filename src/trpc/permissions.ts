// The catalogue of permission keys: the one source of truth for what "list permissions"
// answers, what API keys and roles may hold, and what every procedure checks.

export const PERMISSION_CATALOGUE = {
  "organizations:read": "Read organizations",
  "organizations:write": "Create, update and delete organizations",
  "organizations:branding": "Change the organization's description and branding (brand colour, logo)",
  "users:read": "Read users",
  "users:write": "Create, update and delete users",
  "members:read": "Read organization members",
  "members:write": "Change and remove organization members",
  "roles:read": "Read roles and the permission catalogue",
  "roles:write": "Create, update and delete custom roles",
  "invitations:read": "Read invitations",
  "invitations:write": "Create, resend and revoke invitations",
  "api-keys:read": "Read API keys",
  "api-keys:write": "Create, update and revoke API keys",
  "devices:read": "Read devices, groups and device activity",
  "devices:write": "Update, label and delete devices",
  "enrollment:write": "Create and revoke enrollment tokens",
  "certificates:read": "Read CA and device certificates",
  "certificates:write": "Issue, renew, revoke and upload certificates",
  "certificates:admin": "Choose the default signing CA",
  "registries:read": "Read registries and sync history",
  "registries:write": "Create, update, sync and delete registries",
  "applications:read": "Read the application catalog",
  "applications:write": "Delete application packages",
  "deployments:read": "Read deployments and rollouts",
  "deployments:write": "Create, change and steer deployments and rollbacks",
  "actions:read": "Read device actions and download their diagnostics bundles",
  "actions:write": "Act on devices: check health, renew a certificate, collect diagnostics; cancel actions",
  "actions:disruptive": "Act on devices in ways that change what runs: reboot, restart, stop or start an application, restart the agent",
  "config:read": "Read device configuration layers, their revisions and devices' effective configuration (never a secret's value)",
  "config:write": "Create, change, roll back and delete device configuration layers and their secrets",
  "telemetry:read": "Read telemetry, logs and fleet health",
  "alerts:read": "Read alert rules, notification targets and deliveries",
  "alerts:write": "Change alert rules and notification targets",
  "audit:read": "Read and export the audit log and activity",
  "tenant:switch": "Switch into other organizations",
  "remote:read": "Read remote-access sessions and their recordings",
  "remote:shell": "Open an interactive shell on a device (only when named: no wildcard includes it)",
  "remote:exec": "Run one command on a device (only when named: no wildcard includes it)",
  "remote:port-forward": "Forward TCP connections to a device (only when named: no wildcard includes it)",
  "remote:files-read": "Copy files from a device (only when named: no wildcard includes it)",
  "remote:files-write": "Copy files to a device (only when named: no wildcard includes it)",
  "remote:manage": "Close others' remote-access sessions and change the remote-access settings (only when named: no wildcard includes it)",
  "platform:admin": "Super Admin operations: only for Super Admins, only when named (no wildcard includes it)",
} as const;

export type Permission = keyof typeof PERMISSION_CATALOGUE;
export const ALL_PERMISSIONS = Object.keys(PERMISSION_CATALOGUE) as Permission[];
export const WILDCARD = "*";

/**
 * Super Admin power. It is not a permission of any organization: no wildcard grants it, only
 * naming it does, and only for a caller who is a Super Admin (principal.ts `can`). Otherwise
 * a `*` key a Super Admin makes for a tenant's CI would reach every other tenant.
 */
export const PLATFORM_ADMIN = "platform:admin" satisfies Permission;

/**
 * Reaching into a device is granted only by naming it, like platform:admin: neither `*` nor
 * `remote:*` nor any read permission includes it (a peer's viewer role once opened consoles
 * through a wildcard read; docs/remote-access.md). The system roles owner and admin name them.
 */
export const REMOTE_NAMED_PERMISSIONS = [
  "remote:shell", "remote:exec", "remote:port-forward", "remote:files-read", "remote:files-write", "remote:manage",
] as const satisfies readonly Permission[];
const NAMED_ONLY: ReadonlySet<string> = new Set<string>([PLATFORM_ADMIN, ...REMOTE_NAMED_PERMISSIONS]);

/** What the system roles may hold: every permission an organization can give (`*` grants those not named-only). */
export const ORGANIZATION_PERMISSIONS = ALL_PERMISSIONS.filter((p) => p !== PLATFORM_ADMIN);

/** A catalogue key, `*`, or `<resource>:*` for a resource with organization permissions (so never `platform:*`). */
export function isKnownPermission(value: string): boolean {
  if (value === WILDCARD || value in PERMISSION_CATALOGUE) return true;
  return /^[a-z-]+:\*$/.test(value) && ORGANIZATION_PERMISSIONS.some((p) => p.startsWith(value.slice(0, -1)));
}

/** `*` grants every organization permission, `devices:*` every action on devices; the named-only ones (platform:admin, remote access) only themselves. */
export function grants(held: Iterable<string>, required: string): boolean {
  const byWildcard = !NAMED_ONLY.has(required);
  const resource = required.split(":")[0];
  for (const p of held) {
    if (p === required || (byWildcard && (p === WILDCARD || p === `${resource}:*`))) return true;
  }
  return false;
}

const read = ALL_PERMISSIONS.filter((p) => p.endsWith(":read"));

/** The system roles every organization has; they cannot be edited or deleted. */
export const SYSTEM_ROLES: { name: string; description: string; permissions: string[] }[] = [
  { name: "owner", description: "Full control of the organization", permissions: [WILDCARD, ...REMOTE_NAMED_PERMISSIONS] },
  {
    name: "admin",
    description: "Manages the organization, its members and everything in it",
    // Branding is the owners' (and of custom roles given it): an administrator renames only.
    permissions: ORGANIZATION_PERMISSIONS.filter((p) => p !== "tenant:switch" && p !== "organizations:branding"),
  },
  {
    name: "operator",
    description: "Runs the fleet: devices, certificates, registries, deployments and alerts",
    permissions: [
      ...read,
      "devices:write", "enrollment:write", "certificates:write", "registries:write",
      "applications:write", "deployments:write", "alerts:write", "actions:write", "actions:disruptive", "config:write",
    ],
  },
  { name: "viewer", description: "Reads everything, changes nothing", permissions: read },
];
