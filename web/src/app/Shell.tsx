// The frame around every signed-in page: navigation for every area, the organization (with
// a switcher when there is more than one), the live connection, the theme, the user's menu,
// and the banner of an active tenant switch. Pages render inside, each in its own Suspense
// and error boundary so that one failing page never blanks the console.
import { Suspense, useEffect, useLayoutEffect, useRef, useState, type ReactNode } from "react";
import { flushSync } from "react-dom";
import { Link, Outlet, useNavigate, useRouterState } from "@tanstack/react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Building2, ChevronDown, LogOut, Monitor, Moon, Sun, UserRound } from "lucide-react";
import { q } from "../api/query";
import { Button } from "../ui/Button";
import { Loading } from "../ui/states";
import { useToast } from "../ui/toast";
import { useAction } from "../ui/useAction";
import { NAV } from "./nav";
import { canGoLive, RealtimeProvider, useRealtimeState } from "./realtime";
import { useOrganizationChanged, useSession, type Session } from "./session";
import { rememberBrandColor, rememberedBrandColor, setBrandColor, setThemeChoice, useTheme, type ThemeChoice } from "./theme";
import { brandingOf } from "../organizations/branding";
import { TenantSwitchBanner, TenantSwitchDialog } from "./tenant-switch";
import { PageErrorBoundary } from "./PageErrorBoundary";
import "./shell.css";

export function Shell() {
  const session = useSession();
  const [signingOut, setSigningOut] = useState(false);
  const logo = useOrganizationBranding(session, !signingOut);
  const signOut = useSignOut(() => flushSync(() => setSigningOut(true)));
  // Signing out: the pages are gone (their polling and live updates with them) before the
  // session ends, so nothing asks for anything with it afterwards (a 401 would say "ended").
  if (signingOut) return <Loading label="Signing out" />;
  return (
    <RealtimeProvider organizationId={session.organization.id} enabled={canGoLive(session.permissions)}>
      <a className="skip-link" href="#main">Skip to content</a>
      <div className="shell">
        <aside className="shell__sidebar">
          <div className="brand">
            {logo
              ? <img className="brand__logo" src={logo} alt={`${session.organization.name} logo`} height={26} />
              : <img src="/favicon.svg" alt="" width={26} height={26} />}
            <span>Fleet Manager</span>
          </div>
          <Navigation session={session} />
        </aside>
        <div className="shell__main">
          <header className="topbar">
            <OrganizationSwitcher session={session} />
            <div className="topbar__spacer" />
            <ConnectionIndicator />
            <ThemeMenu />
            <UserMenu session={session} onSignOut={signOut} />
          </header>
          {session.activeSwitch && <TenantSwitchBanner session={session} />}
          <main id="main" className="content" tabIndex={-1}>
            <PageErrorBoundary>
              <Suspense fallback={<Loading />}>
                <Outlet />
              </Suspense>
            </PageErrorBoundary>
          </main>
        </div>
      </div>
    </RealtimeProvider>
  );
}

/**
 * The organization's colour painted over the theme and its logo (answered) in the sidebar, as
 * its settings store them (organizations/OrganizationSettingsPage.tsx). Read with the same
 * query as that page, so a saved change shows at once; without organizations:read (a custom
 * role) the console keeps its own look rather than ask for what the role may not read.
 */
function useOrganizationBranding(session: Session, active: boolean): string | undefined {
  const canRead = session.permissions.includes("organizations:read");
  const organizationId = session.organization.id;
  const org = useQuery({ ...q.organizations.get.options({ id: organizationId }), enabled: canRead && active });
  const branding = brandingOf(org.data?.branding);
  // Until the organization is read, the colour this browser last showed for it; painted
  // before the shell's first frame (a layout effect), so a reload shows no other colour first.
  const color = !canRead ? null : org.data ? branding.primaryColor ?? null : rememberedBrandColor(organizationId);
  useLayoutEffect(() => setBrandColor(color), [color]);
  useEffect(() => {
    if (org.data) rememberBrandColor(organizationId, branding.primaryColor ?? null);
  }, [org.data, organizationId, branding.primaryColor]);
  useEffect(() => () => setBrandColor(null), []);
  return branding.logo;
}

function Navigation({ session }: { session: Session }) {
  const pathname = useRouterState({ select: (s) => s.location.pathname });
  return (
    <nav aria-label="Main">
      {NAV.map((section) => {
        const areas = section.areas.filter((a) => !a.needs || session.permissions.includes(a.needs));
        if (areas.length === 0) return null;
        return (
          <div key={section.label} className="nav-section">
            <h2 className="nav-section__title">{section.label}</h2>
            <ul>
              {areas.map(({ label, to, icon: Icon }) => (
                <li key={label}>
                  <Link
                    to={to}
                    className="nav-link"
                    aria-current={(to === "/" ? pathname === "/" : pathname === to || pathname.startsWith(`${to}/`)) ? "page" : undefined}
                  >
                    <Icon aria-hidden="true" />
                    {label}
                    {to === "/alerts" && <FiringCount />}
                  </Link>
                </li>
              ))}
            </ul>
          </div>
        );
      })}
    </nav>
  );
}

/**
 * How many alerts fire now, beside "Alerts": an alerts query, so the realtime channel's alert
 * events refresh it like every other view of alerts (STALE_AFTER in realtime.tsx).
 */
function FiringCount() {
  const firing = useQuery({ ...q.alerts.list.options({ state: "firing", limit: 1, offset: 0 }) });
  const total = firing.data?.total ?? 0;
  if (total === 0) return null;
  return <span className="nav-count">{total.toLocaleString()}<span className="visually-hidden"> firing</span></span>;
}

/** A button that opens a small menu below it; Escape or a click elsewhere closes it. */
function Menu({ label, button, children, align = "right" }: { label?: string; button: ReactNode; children: (close: () => void) => ReactNode; align?: "left" | "right" }) {
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const onDown = (e: MouseEvent) => ref.current && !ref.current.contains(e.target as Node) && setOpen(false);
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && setOpen(false);
    document.addEventListener("mousedown", onDown);
    document.addEventListener("keydown", onKey);
    return () => {
      document.removeEventListener("mousedown", onDown);
      document.removeEventListener("keydown", onKey);
    };
  }, [open]);
  return (
    <div className="menu" ref={ref}>
      <button type="button" className="btn btn--ghost menu__button" aria-haspopup="true" aria-expanded={open} aria-label={label} onClick={() => setOpen(!open)}>
        {button}
      </button>
      {open && <div className={`menu__panel menu__panel--${align}`}>{children(() => setOpen(false))}</div>}
    </div>
  );
}

function OrganizationSwitcher({ session }: { session: Session }) {
  const organizationChanged = useOrganizationChanged();
  const [switchInto, setSwitchInto] = useState<{ id: string; name: string } | null>(null);
  const accessible = useQuery({ ...q.tenant.accessible.options({ limit: 50, offset: 0 }), enabled: session.canSwitch });
  const others = (accessible.data?.items ?? []).filter((o) => !o.isCurrent);

  const switchTo = useAction({ mutationFn: (org: { id: string; name: string }) => q.auth.actIn.call({ organizationId: org.id }) }, {
    success: (_out, org) => `Now acting in ${org.name}`,
    failure: (org) => `Cannot act in ${org.name}`,
    onSuccess: organizationChanged,
  });
  function actIn(org: { id: string; name: string; role: string | null }) {
    if (org.role === null) return setSwitchInto(org); // a Super Admin entering a tenant: time-bound, with a reason
    void switchTo.run(org);
  }

  const current = (
    <>
      <Building2 aria-hidden="true" />
      <span className="org-name">{session.organization.name}</span>
      {session.role && <span className="badge">{session.role}</span>}
    </>
  );
  // A switcher only once there is somewhere to switch to (no menu that turns out empty).
  if (!session.canSwitch || !accessible.isSuccess || others.length === 0) {
    return <div className="org-current" aria-label="Organization">{current}</div>;
  }
  return (
    <>
      {/* Named by what it shows (the organization and role), then what it does. */}
      <Menu align="left" button={<>{current}<span className="visually-hidden">: switch organization</span><ChevronDown aria-hidden="true" /></>}>
        {(close) => (
          <ul className="menu__list" aria-label="Organizations">
            {others.map((org) => (
              <li key={org.id}>
                <button type="button" className="menu__item" onClick={() => { close(); actIn(org); }}>
                  <span>{org.name}</span>
                  <span className="faint">{org.role ?? "Super Admin: switch with a reason"}</span>
                </button>
              </li>
            ))}
            {accessible.data && accessible.data.total > accessible.data.items.length && (
              <li className="menu__note">and {accessible.data.total - accessible.data.items.length} more</li>
            )}
          </ul>
        )}
      </Menu>
      <TenantSwitchDialog target={switchInto} onClose={() => setSwitchInto(null)} />
    </>
  );
}

function ConnectionIndicator() {
  const { state, retryInSeconds } = useRealtimeState();
  const text = state === "live" ? "Live" : state === "connecting" ? "Connecting…" : state === "reconnecting" ? `Reconnecting${retryInSeconds ? ` in ${retryInSeconds} s` : "…"}` : "Live updates off";
  return (
    <span className={`connection connection--${state}`} role="status" aria-live="polite" title="Live updates over the realtime channel">
      <span className="connection__dot" aria-hidden="true" />
      {text}
    </span>
  );
}

const THEMES: { value: ThemeChoice; label: string; icon: ReactNode }[] = [
  { value: "light", label: "Light", icon: <Sun aria-hidden="true" /> },
  { value: "dark", label: "Dark", icon: <Moon aria-hidden="true" /> },
  { value: "system", label: "System", icon: <Monitor aria-hidden="true" /> },
];

function ThemeMenu() {
  const theme = useTheme();
  const current = THEMES.find((t) => t.value === theme)!;
  return (
    <Menu label={`Theme: ${current.label}`} button={current.icon}>
      {(close) => (
        <ul className="menu__list" aria-label="Theme">
          {THEMES.map((t) => (
            <li key={t.value}>
              <button type="button" className="menu__item menu__item--row" aria-pressed={theme === t.value} onClick={() => { setThemeChoice(t.value); close(); }}>
                {t.icon}
                {t.label}
              </button>
            </li>
          ))}
        </ul>
      )}
    </Menu>
  );
}

/**
 * Signing out, in this order: `stop` unmounts the signed-in pages (their polling, refetches and
 * the realtime channel go with them) and what is still in flight is cancelled; only then does
 * the session end; then sign-in, and what the signed-in area could see is dropped.
 */
function useSignOut(stop: () => void): () => Promise<void> {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const toast = useToast();
  return async () => {
    stop();
    await queryClient.cancelQueries();
    try {
      await q.auth.logout.call({});
    } catch (err) {
      // An already ended session is signed out anyway.
      if (!(err instanceof Error)) toast.error(err);
    }
    await navigate({ to: "/sign-in", search: {} });
    queryClient.clear();
  };
}

function UserMenu({ session, onSignOut }: { session: Session; onSignOut: () => Promise<void> }) {
  return (
    <Menu label={`Account: ${session.name}`} button={<><UserRound aria-hidden="true" /><span className="user-name">{session.name}</span><ChevronDown aria-hidden="true" /></>}>
      {(close) => (
        <div>
          <div className="menu__header">
            <strong>{session.name}</strong>
            <span className="faint">{session.email}</span>
            {session.isSuperAdmin && <span className="badge badge--accent">Super Admin</span>}
          </div>
          <ul className="menu__list" aria-label="Account">
            <li>
              <Link to="/profile" className="menu__item menu__item--row" onClick={close}>
                <UserRound aria-hidden="true" /> Profile
              </Link>
            </li>
            <li>
              <button type="button" className="menu__item menu__item--row" onClick={() => { close(); void onSignOut(); }}>
                <LogOut aria-hidden="true" /> Sign out
              </button>
            </li>
          </ul>
        </div>
      )}
    </Menu>
  );
}
