// "Members & roles": one area of three pages (members, invitations, roles), each its own path
// under /members so that the sidebar entry stays current on all three. A tab is shown only
// to someone whose role may read what it lists.
import { Link, useRouterState } from "@tanstack/react-router";
import { useCan } from "../app/session";
import { PageHeader } from "../ui/Card";
import type { ReactNode } from "react";
import "./members.css";

const TABS = [
  { to: "/members", label: "Members", needs: "members:read" },
  { to: "/members/invitations", label: "Invitations", needs: "invitations:read" },
  { to: "/members/roles", label: "Roles", needs: "roles:read" },
] as const;

export function MembersArea({ description, actions, children }: { description: ReactNode; actions?: ReactNode; children: ReactNode }) {
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  const can = { "members:read": useCan("members:read"), "invitations:read": useCan("invitations:read"), "roles:read": useCan("roles:read") };
  return (
    <>
      <PageHeader title="Members & roles" description={description} actions={actions} />
      <nav className="tabs" aria-label="Members and roles">
        {TABS.filter((t) => can[t.needs]).map((t) => (
          <Link key={t.to} to={t.to} className="tab" activeOptions={{ exact: true }} aria-current={pathname === t.to ? "page" : undefined}>{t.label}</Link>
        ))}
      </nav>
      {children}
    </>
  );
}
