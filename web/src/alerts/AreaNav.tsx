// The Alerts area's three pages (alerts, rules, notification targets), as links: each is its own
// URL, so the browser's back button and a shared link work. The router marks the current one
// (aria-current="page"); "Alerts" only on its own path, not under /alerts/rules.
import { Link } from "@tanstack/react-router";
import "./alerts.css";

const PAGES = [
  { to: "/alerts", label: "Alerts", exact: true },
  { to: "/alerts/rules", label: "Rules", exact: false },
  { to: "/notification-targets", label: "Notification targets", exact: false },
] as const;

export function AlertsAreaNav() {
  return (
    <nav className="tabs" aria-label="Alerts area">
      {PAGES.map((page) => (
        <Link key={page.to} to={page.to} className="tab" activeOptions={{ exact: page.exact, includeSearch: false }}>{page.label}</Link>
      ))}
    </nav>
  );
}
