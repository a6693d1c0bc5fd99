// Tenant switching for Super Admins: enter an organization for a limited time with a reason
// (the part-1 dialog and banner, app/tenant-switch.tsx), every switch active on the platform
// now (spec op 17), and one's own history. A switch is ended by the person who holds it (POST
// /tenant/return, from this page or the banner); another Super Admin's ends by itself when it
// expires, which the table says.
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { LogIn, LogOut } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { TenantSwitchDialog, useEndSwitch } from "../app/tenant-switch";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { Empty, Forbidden } from "../ui/states";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useLocalPage } from "../ui/useLocalPage";
import "../users/platform.css";

type Switch = RouterOutputs["tenant"]["activeSwitches"]["items"][number];
const PAGE = 25;

export function TenantSwitchesPage() {
  if (!useCan("platform:admin")) return <><PageHeader title="Tenant switches" /><Forbidden what="tenant switches" /></>;
  return <TenantSwitches />;
}

function TenantSwitches() {
  const session = useSession();
  const endOwn = useEndSwitch("Switch ended");
  const [target, setTarget] = useState<{ id: string; name: string } | null>(null);
  const [chosen, setChosen] = useState("");
  const activePage = useLocalPage(PAGE);
  const historyPage = useLocalPage(PAGE);
  // Organizations the Super Admin is not a member of: entering those is a switch (members act in theirs from the header).
  const accessible = useQuery(q.tenant.accessible.options({ limit: 100, offset: 0 }));
  const nonMember = (accessible.data?.items ?? []).filter((o) => o.role === null);
  const enterable = nonMember.filter((o) => !o.isCurrent);
  const active = useQuery({ ...q.tenant.activeSwitches.options(activePage.input), placeholderData: keepPreviousData });
  const history = useQuery({ ...q.tenant.history.options(historyPage.input), placeholderData: keepPreviousData });

  const when = (iso?: string) => iso ? <time dateTime={iso} title={formatDateTime(iso)}>{formatDateTime(iso)}</time> : <span className="faint">–</span>;
  const activeColumns: Column<Switch>[] = [
    { id: "who", header: "Super Admin", cell: (s) => s.userId === session.userId ? <strong>you</strong> : <code title={s.userId}>{s.userId.slice(0, 8)}</code> },
    { id: "into", header: "Acting in", cell: (s) => s.toOrgName ?? s.toOrgId },
    { id: "from", header: "From", cell: (s) => s.fromOrgName ?? <span className="faint">–</span> },
    { id: "reason", header: "Reason", cell: (s) => s.reason ?? <span className="faint">none given</span> },
    { id: "since", header: "Since", cell: (s) => when(s.switchedAt) },
    { id: "ends", header: "Ends", cell: (s) => s.expiresAt ? <RelativeTime value={s.expiresAt} /> : <span className="faint">–</span> },
    {
      id: "actions",
      header: "Actions",
      cell: (s) => s.userId === session.userId && session.activeSwitch?.id === s.id
        ? <Button size="small" icon={<LogOut />} busy={endOwn.isPending} onClick={() => void endOwn.run()} aria-label={`End switch into ${s.toOrgName ?? s.toOrgId}`}>End switch</Button>
        : <span className="faint">ends by itself</span>,
    },
  ];
  const historyColumns: Column<Switch>[] = [
    { id: "into", header: "Organization", cell: (s) => s.toOrgName ?? s.toOrgId },
    { id: "reason", header: "Reason", cell: (s) => s.reason ?? <span className="faint">none given</span> },
    { id: "since", header: "Started", cell: (s) => when(s.switchedAt) },
    { id: "returned", header: "Ended", cell: (s) => s.isActive ? <span className="badge badge--accent">active</span> : when(s.returnedAt ?? s.expiresAt) },
  ];

  return (
    <>
      <PageHeader title="Tenant switches" description="Act inside an organization you are not a member of, for a limited time and with a reason recorded in its audit log. A banner shows while a switch lasts." />
      <div className="stack">
        <Card title="Start a switch">
          <form className="row" aria-label="Start a switch" onSubmit={(e) => { e.preventDefault(); const org = enterable.find((o) => o.id === chosen); if (org) setTarget(org); }}>
            <div className="field platform-search">
              <label htmlFor="switch-organization">Organization</label>
              <select id="switch-organization" className="select" value={chosen} onChange={(e) => setChosen(e.target.value)}>
                <option value="">Choose an organization</option>
                {enterable.map((o) => <option key={o.id} value={o.id}>{o.name} ({o.status})</option>)}
              </select>
            </div>
            <Button type="submit" variant="primary" icon={<LogIn />} disabled={!chosen}>Switch into…</Button>
          </form>
          {accessible.data && nonMember.length === 0 && <p className="faint">You are a member of every organization: act in one from the organization menu in the header.</p>}
          {session.activeSwitch && <p className="faint">Switching again replaces the active switch; your home organization stays {session.homeOrganization?.name ?? "the same"}.</p>}
        </Card>
        <Card title="Active switches" flush>
          <QueryTable query={active} what="tenant switches" caption="Active switches" columns={activeColumns} rowKey={(s) => s.id} page={activePage} pageLabel="Active switch pages"
            empty={<Empty title="No switch is active">No Super Admin is acting in another organization right now.</Empty>} />
        </Card>
        <Card title="Your switches" flush>
          <QueryTable query={history} what="your switches" caption="Your switches" columns={historyColumns} rowKey={(s) => s.id} page={historyPage} pageLabel="Switch history pages"
            empty={<Empty title="You have not switched yet" />} />
        </Card>
      </div>
      <TenantSwitchDialog target={target} onClose={() => setTarget(null)} />
    </>
  );
}
