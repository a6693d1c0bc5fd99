// Every area of the service, in the order the sidebar shows them. `needs` is the
// permission the area's main list requires, the same key the API checks: without it the
// entry is not shown.
import { ArrowLeftRight, Bell, ListChecks, Building, Building2, Cpu, DoorOpen, FileCode, Gauge, GitBranch, Key, KeyRound, Package, Rocket, ScrollText, ShieldCheck, SlidersHorizontal, Store, Tags, UserCog, Users, type LucideIcon } from "lucide-react";
import type { Permission } from "./session";

export interface NavArea {
  label: string;
  /** the console path */
  to: "/" | "/devices" | "/enrollment-requests" | "/groups" | "/jobs" | "/enrollment-tokens" | "/applications" | "/registries" | "/marketplace" | "/deployments" | "/config" | "/config-layers"
    | "/certificates" | "/alerts" | "/audit" | "/members" | "/api-keys"
    | "/organization" | "/platform/users" | "/platform/organizations" | "/platform/tenant-switches";
  needs?: Permission;
  icon: LucideIcon;
}

export interface NavSection {
  label: string;
  areas: NavArea[];
}

export const NAV: NavSection[] = [
  {
    label: "Fleet",
    areas: [
      { label: "Overview", to: "/", icon: Gauge },
      { label: "Devices", to: "/devices", needs: "devices:read", icon: Cpu },
      { label: "Lobby", to: "/enrollment-requests", needs: "devices:read", icon: DoorOpen },
      { label: "Groups", to: "/groups", needs: "devices:read", icon: Tags },
      { label: "Jobs", to: "/jobs", needs: "actions:read", icon: ListChecks },
      { label: "Enrollment", to: "/enrollment-tokens", needs: "devices:read", icon: KeyRound },
    ],
  },
  {
    label: "Software",
    areas: [
      { label: "Applications", to: "/applications", needs: "applications:read", icon: Package },
      { label: "Deployments", to: "/deployments", needs: "deployments:read", icon: Rocket },
      { label: "Registries", to: "/registries", needs: "registries:read", icon: GitBranch },
      { label: "Marketplace", to: "/marketplace", needs: "registries:read", icon: Store },
      { label: "Configuration", to: "/config", needs: "deployments:read", icon: FileCode },
      { label: "Device configuration", to: "/config-layers", needs: "config:read", icon: SlidersHorizontal },
    ],
  },
  {
    label: "Governance",
    areas: [
      { label: "Alerts", to: "/alerts", needs: "alerts:read", icon: Bell },
      { label: "Certificates", to: "/certificates", needs: "certificates:read", icon: ShieldCheck },
      { label: "Audit log", to: "/audit", needs: "audit:read", icon: ScrollText },
      { label: "Members & roles", to: "/members", needs: "members:read", icon: Users },
      { label: "API keys", to: "/api-keys", needs: "api-keys:read", icon: Key },
      { label: "Organization", to: "/organization", needs: "organizations:read", icon: Building2 },
    ],
  },
  {
    // Super Admins only: platform:admin is in a session's permissions only for them.
    label: "Platform",
    areas: [
      { label: "Users", to: "/platform/users", needs: "platform:admin", icon: UserCog },
      { label: "Organizations", to: "/platform/organizations", needs: "platform:admin", icon: Building },
      { label: "Tenant switches", to: "/platform/tenant-switches", needs: "platform:admin", icon: ArrowLeftRight },
    ],
  },
];
