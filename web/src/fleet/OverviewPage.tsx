// The landing page: the fleet at a glance. Every number comes from the API (devices by
// status and the health summary, op 14 for a label's values, firing alerts, deployments in
// progress, the latest status changes) and stays current through the realtime channel,
// which marks these queries stale when a device changes status. Each card asks only for what
// the role may read; a card the role cannot read is not shown.
import { useState } from "react";
import { Link } from "@tanstack/react-router";
import { useQuery } from "@tanstack/react-query";
import { AlertTriangle, BellRing, Cpu, HardDrive, ShieldAlert } from "lucide-react";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Bars, Donut, Legend, Progress, type Slice } from "../ui/charts";
import { Card, PageHeader } from "../ui/Card";
import { Empty, ErrorState, Loading } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { StatusBadge, statusLabel } from "../ui/StatusBadge";
import { DEVICE_STATUSES, STATUS_COLORS } from "../devices/types";
import { StateBadge } from "../deployments/StateBadge";
import "./overview.css";
import { counted, plural } from "../../../src/lib/plural";

const numbers = new Intl.NumberFormat();

export function OverviewPage() {
  const session = useSession();
  const canDevices = useCan("devices:read");
  const canTelemetry = useCan("telemetry:read");
  const canAlerts = useCan("alerts:read");
  const canDeployments = useCan("deployments:read");
  return (
    <>
      <PageHeader title="Overview" description={`The fleet of ${session.organization.name}, live.`} />
      <div className="overview">
        {canDevices && <StatusCard />}
        {canTelemetry && <HealthCard />}
        {canDevices && <LabelsCard />}
        {canAlerts && <AlertsCard />}
        {canDeployments && <DeploymentsCard />}
        {canDevices && <RecentChangesCard />}
      </div>
    </>
  );
}

function StatusCard() {
  const canEnroll = useCan("enrollment:write");
  const stats = useQuery(q.groups.stats.options({}));
  const byStatus = stats.data?.byStatus;
  const slices: Slice[] = DEVICE_STATUSES.map((s) => ({ key: s, label: statusLabel(s), value: byStatus?.[s] ?? 0, color: STATUS_COLORS[s] }));
  return (
    <Card title="Devices by status" id="status" actions={<Link to="/devices">All devices</Link>}>
      {stats.isPending ? <Loading /> : stats.isError ? <ErrorState error={stats.error} retry={() => stats.refetch()} /> : stats.data.total === 0 ? (
        canEnroll ? (
          <Empty title="No devices yet" action={<Link to="/enrollment-tokens" className="btn btn--primary">Enroll devices</Link>}>
            Create an enrollment token; its page shows the command that enrolls simulated devices in a minute.
          </Empty>
        ) : (
          <Empty title="No devices yet">Devices appear here once they enroll with a token of this organization, which an administrator creates.</Empty>
        )
      ) : (
        <div className="status-card">
          <Donut slices={slices} label="Devices by status" center={<><strong className="big-number">{numbers.format(stats.data.total)}</strong><span className="faint">devices</span></>} />
          <Legend
            slices={slices}
            onPick={(key) => <Link to="/devices" search={{ status: key }}>{statusLabel(key as (typeof DEVICE_STATUSES)[number])}</Link>}
          />
        </div>
      )}
    </Card>
  );
}

function HealthCard() {
  const health = useQuery(q.fleet.health.options({}));
  return (
    <Card title="Fleet health" id="health">
      {health.isPending ? <Loading /> : health.isError ? <ErrorState error={health.error} retry={() => health.refetch()} /> : (
        <div className="health">
          <HealthFigure icon={<Cpu />} value={health.data.resourcePressure.count} label="under resource pressure" detail={`CPU, memory or disk above ${health.data.resourcePressure.thresholds.cpuUsagePercent} %`} tone={health.data.resourcePressure.count ? "warning" : "ok"} />
          <HealthFigure icon={<HardDrive />} value={health.data.failedContainers.devices} label="with failed containers" detail={`${counted(health.data.failedContainers.containers, "container")} failed`} tone={health.data.failedContainers.devices ? "danger" : "ok"} />
          <HealthFigure icon={<ShieldAlert />} value={health.data.certificates.expiringSoon + health.data.certificates.expired} label="certificates expiring or expired" detail={`${health.data.certificates.expired} expired, ${health.data.certificates.expiringSoon} within ${counted(health.data.certificates.expiringWithinDays, "day")}`} tone={health.data.certificates.expired ? "danger" : health.data.certificates.expiringSoon ? "warning" : "ok"} />
          <HealthFigure icon={<BellRing />} value={health.data.alerts.firing} label={`${plural(health.data.alerts.firing, "alert")} firing`} detail={`${health.data.alerts.bySeverity.critical} critical, ${health.data.alerts.bySeverity.warning} warning`} tone={health.data.alerts.bySeverity.critical ? "danger" : health.data.alerts.firing ? "warning" : "ok"} />
          {health.data.resourcePressure.devices.length > 0 && (
            <div className="health__list">
              <h3>Under pressure</h3>
              <ul>
                {health.data.resourcePressure.devices.slice(0, 5).map((d) => (
                  <li key={d.deviceId}>
                    <Link to="/devices/$deviceId" params={{ deviceId: d.deviceId }} search={{ tab: "telemetry" }}>{d.name}</Link>
                    <span className="faint"> {d.over.join(", ")}</span>
                  </li>
                ))}
              </ul>
            </div>
          )}
        </div>
      )}
    </Card>
  );
}

function HealthFigure({ icon, value, label, detail, tone }: { icon: React.ReactNode; value: number; label: string; detail: string; tone: "ok" | "warning" | "danger" }) {
  return (
    <div className={`health-figure health-figure--${tone}`}>
      <span className="health-figure__icon" aria-hidden="true">{icon}</span>
      <div>
        <div><strong className="num">{numbers.format(value)}</strong> {label}</div>
        <div className="faint">{detail}</div>
      </div>
    </div>
  );
}

function LabelsCard() {
  const keys = useQuery(q.groups.labelKeys.options({ limit: 50, offset: 0 }));
  const [picked, setPicked] = useState<string | null>(null);
  // Unless one is picked, the key most devices carry (site, rather than a key a few devices have).
  const widest = keys.data?.items.reduce<(typeof keys.data.items)[number] | null>((best, k) => (!best || k.deviceCount > best.deviceCount ? k : best), null);
  const key = picked ?? widest?.key ?? null;
  const groups = useQuery({ ...q.groups.byLabel.options({ key: key ?? "" }), enabled: key !== null });
  return (
    <Card
      title="Labels"
      id="labels"
      actions={keys.data && keys.data.items.length > 0 && (
        <label className="row">
          <span className="visually-hidden">Label key</span>
          <select className="select" value={key ?? ""} onChange={(e) => setPicked(e.target.value)} aria-label="Label key">
            {keys.data.items.map((k) => <option key={k.key} value={k.key}>{k.key} ({counted(k.valueCount, "value")})</option>)}
          </select>
        </label>
      )}
    >
      {keys.isPending ? <Loading /> : keys.isError ? <ErrorState error={keys.error} /> : key === null ? (
        <Empty title="No labels yet">Labels come from enrollment tokens and from editing devices; groups are built from them.</Empty>
      ) : groups.isPending ? <Loading /> : groups.isError ? <ErrorState error={groups.error} /> : (
        <>
          <Bars
            label={`Devices by ${key}`}
            rows={groups.data.groups.slice(0, 8).map((g) => ({
              key: g.value,
              label: <Link to="/devices" search={{ labels: `${key}=${g.value}` }}>{g.value || "(empty)"}</Link>,
              value: g.count,
              segments: DEVICE_STATUSES.map((s) => ({ key: s, label: statusLabel(s), value: g.byStatus[s], color: STATUS_COLORS[s] })),
            }))}
          />
          <p className="card-footnote">
            {groups.data.groups.length > 8 ? `${groups.data.groups.length - 8} more values. ` : ""}
            <Link to="/groups" search={{ key }}>Explore {key} in Groups</Link>
          </p>
        </>
      )}
    </Card>
  );
}

function AlertsCard() {
  const alerts = useQuery(q.alerts.list.options({ state: "firing", limit: 6, offset: 0 }));
  return (
    <Card title="Active alerts" id="alerts">
      {alerts.isPending ? <Loading /> : alerts.isError ? <ErrorState error={alerts.error} /> : alerts.data.total === 0 ? (
        <Empty title="No alert is firing">Alert rules watch metrics, offline devices, failed deployments and expiring certificates.</Empty>
      ) : (
        <>
          <ul className="item-list">
            {alerts.data.items.map((a) => (
              <li key={`${a.ruleId}-${a.subjectId}`}>
                <span className={`badge badge--${a.severity === "critical" ? "danger" : a.severity === "warning" ? "warning" : "accent"}`}>
                  <AlertTriangle aria-hidden="true" width={12} height={12} />
                  {a.severity}
                </span>
                <div className="item-list__main">
                  <strong>{a.ruleName}</strong>
                  <span className="faint">
                    {a.subjectType === "config_source"
                      ? (a.subjectName ? <Link to="/config/sources/$sourceId" params={{ sourceId: a.subjectId }}>config source {a.subjectName}</Link> : "deleted config source")
                      : a.deviceName && a.deviceId ? <Link to="/devices/$deviceId" params={{ deviceId: a.deviceId }}>{a.deviceName}</Link> : "deleted device"}
                    {a.value !== null && ` · value ${numbers.format(a.value)}`}
                  </span>
                </div>
                <RelativeTime value={a.firingSince} />
              </li>
            ))}
          </ul>
          {alerts.data.total > alerts.data.items.length && <p className="card-footnote">{alerts.data.total - alerts.data.items.length} more firing</p>}
        </>
      )}
    </Card>
  );
}

function DeploymentsCard() {
  // in progress: rolling out, awaiting approval or paused (src/modules/deployments/deployment-state.ts), never one that ended
  const deployments = useQuery(q.deployments.list.options({ inProgress: "true", limit: 6, offset: 0 }));
  return (
    <Card title="Deployments in progress" id="deployments">
      {deployments.isPending ? <Loading /> : deployments.isError ? <ErrorState error={deployments.error} /> : deployments.data.total === 0 ? (
        <Empty title="Nothing is rolling out">Deployments rolling out, awaiting approval or paused show their progress here.</Empty>
      ) : (
        <ul className="item-list">
          {deployments.data.items.map((d) => {
            const p = d.progress;
            const segments: Slice[] = [
              { key: "running", label: "running", value: p.running, color: "var(--status-online)" },
              { key: "active", label: "installing", value: p.downloading + p.installing, color: "var(--status-provisioned)" },
              { key: "failed", label: "failed", value: p.failed, color: "var(--status-error)" },
            ];
            return (
              <li key={d.id} className="item-list__stacked">
                <div className="row">
                  <strong>{d.name}</strong>
                  <span className="faint">{d.applicationName} {d.version}</span>
                  <StateBadge deployment={d} />
                </div>
                <Progress label={`${d.name}: ${p.running} of ${p.total} running`} value={p.running} max={p.total} segments={segments} />
                <span className="faint num">{p.running} of {p.total} running{p.failed ? `, ${p.failed} failed` : ""}{p.skipped ? `, ${p.skipped} skipped` : ""}</span>
              </li>
            );
          })}
        </ul>
      )}
    </Card>
  );
}

function RecentChangesCard() {
  const recent = useQuery(q.devices.list.options({ sort: "statusChangedAt", order: "desc", limit: 8, offset: 0 }));
  const changed = recent.data?.items.filter((d) => d.statusChangedAt) ?? [];
  return (
    <Card title="Latest status changes" id="recent" actions={<Link to="/devices" search={{ sort: "statusChangedAt", order: "desc" }}>All</Link>}>
      {recent.isPending ? <Loading /> : recent.isError ? <ErrorState error={recent.error} /> : changed.length === 0 ? (
        <Empty title="No status changes yet" />
      ) : (
        <ul className="item-list">
          {changed.map((d) => (
            <li key={d.id}>
              <StatusBadge status={d.status} />
              <div className="item-list__main">
                <Link to="/devices/$deviceId" params={{ deviceId: d.id }}>{d.name}</Link>
              </div>
              <RelativeTime value={d.statusChangedAt} />
            </li>
          ))}
        </ul>
      )}
    </Card>
  );
}
