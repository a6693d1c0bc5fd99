// The device's telemetry: the latest snapshot (op 13) as gauges, and its history (op 11) over
// the last hour, day or week or a custom range, at a chosen bucket interval (range and interval
// in the URL), as three uPlot charts whose cursors move together. A relative range moves on
// by itself once a minute. Lines break where the device sent nothing.
import { useEffect, useMemo, useState } from "react";
import { useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { q } from "../../api/query";
import { statusOf } from "../../api/client";
import { Button } from "../../ui/Button";
import { Card } from "../../ui/Card";
import { Gauge, Stat } from "../../ui/charts";
import { Empty, ErrorState, Loading } from "../../ui/states";
import { RelativeTime, formatDateTime, useNow } from "../../ui/time";
import { TimeSeriesChart, type ChartSeries } from "../../ui/TimeSeriesChart";
import type { ValueUnit } from "../../ui/time-series";
import type { Device } from "../types";
import type { DeviceDetailSearch } from "../search";
import {
  bucketsToColumnSets, formatBytes, formatUptime, fromLocalInput, INTERVALS, resolveRange, toLocalInput,
  type Bucket, type Interval, type Metric, type RangeKey,
} from "./telemetry";
import "./telemetry.css";

interface ChartSpec {
  id: string;
  title: string;
  unit: ValueUnit;
  series: (ChartSeries & { metric: Metric })[];
}

const CHARTS: ChartSpec[] = [
  {
    id: "resources",
    title: "CPU, memory and disk use",
    unit: "percent",
    series: [
      { metric: "cpuUsagePercent", label: "CPU", color: "--chart-1" },
      { metric: "memoryUsagePercent", label: "Memory", color: "--chart-4" },
      { metric: "diskUsagePercent", label: "Disk", color: "--chart-3" },
    ],
  },
  {
    id: "containers",
    title: "Containers",
    unit: "count",
    series: [
      { metric: "containersRunning", label: "Running", color: "--chart-2" },
      { metric: "containersFailed", label: "Failed", color: "--chart-5" },
    ],
  },
  {
    id: "problems",
    title: "Restarts and errors",
    unit: "count",
    series: [
      { metric: "restartCount", label: "Restarts (total)", color: "--chart-3" },
      { metric: "errorCount", label: "Errors", color: "--chart-5" },
    ],
  },
];

const RANGE_LABELS: Record<RangeKey, string> = { "1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days", custom: "Custom" };
const INTERVAL_LABELS: Record<Interval, string> = { "1m": "1 minute", "5m": "5 minutes", "1h": "1 hour", "1d": "1 day" };

export function TelemetryTab({ device }: { device: Device }) {
  const [historyShowsData, setHistoryShowsData] = useState(false);
  return (
    <div className="stack">
      <LatestCard device={device} historyShowsData={historyShowsData} />
      <HistoryCard device={device} onData={setHistoryShowsData} />
    </div>
  );
}

const noTelemetryYet = (query: { state: { error: unknown } }) => statusOf(query.state.error) === 404;

function LatestCard({ device, historyShowsData }: { device: Device; historyShowsData: boolean }) {
  // A device without telemetry answers 404 here: instead of asking again every minute (a 404
  // each time), ask again once the history, which keeps refreshing, shows data.
  const latest = useQuery({
    ...q.telemetry.latest.options({ id: device.id }),
    refetchInterval: (query) => (noTelemetryYet(query) ? false : 60_000),
    refetchOnWindowFocus: (query) => !noTelemetryYet(query),
  });
  const { refetch } = latest;
  const missing = statusOf(latest.error) === 404;
  useEffect(() => {
    if (missing && historyShowsData) void refetch();
  }, [missing, historyShowsData, refetch]);
  const s = latest.data;
  return (
    <Card
      title="Latest snapshot"
      actions={s && (
        <span className="muted">
          reported <RelativeTime value={s.timestamp} />
          {s.uptimeSeconds !== undefined && <> · up {formatUptime(s.uptimeSeconds)}</>}
        </span>
      )}
    >
      {latest.isPending ? <Loading label="Loading the latest snapshot" /> : latest.isError ? (
        statusOf(latest.error) === 404
          ? <Empty title="No telemetry yet">The device has not sent a snapshot yet; its gauges appear with the first one its agent sends.</Empty>
          : <ErrorState error={latest.error} what="this device's telemetry" retry={() => latest.refetch()} />
      ) : (
        <div className="telemetry-latest">
          <div className="telemetry-gauges">
            <Gauge label="CPU" value={s!.cpuUsagePercent} />
            <Gauge label="Memory" value={s!.memoryUsagePercent} detail={usedOf(s!.memoryUsedBytes, s!.memoryTotalBytes)} />
            <Gauge label="Disk" value={s!.diskUsagePercent} detail={usedOf(s!.diskUsedBytes, s!.diskTotalBytes)} />
          </div>
          <div className="telemetry-stats">
            <Stat label="Containers running" value={count(s!.containersRunning)} />
            <Stat label="Containers failed" value={count(s!.containersFailed)} tone={s!.containersFailed ? "danger" : undefined} />
            <Stat label="Restarts" value={count(s!.restartCount)} detail="since the agent started" />
            <Stat label="Errors" value={count(s!.errorCount)} tone={s!.errorCount ? "warning" : undefined} detail="in the last report" />
          </div>
        </div>
      )}
    </Card>
  );
}

const counts = new Intl.NumberFormat();
const count = (n: number | undefined) => (n === undefined ? "–" : counts.format(n));
const usedOf = (used: number | undefined, total: number | undefined) =>
  used !== undefined && total !== undefined ? `${formatBytes(used)} of ${formatBytes(total)}` : undefined;

function HistoryCard({ device, onData }: { device: Device; onData: (shows: boolean) => void }) {
  const search = useSearch({ from: "/app/devices/$deviceId" });
  const navigate = useNavigate({ from: "/devices/$deviceId" });
  const now = useNow();
  const resolved = resolveRange(search, now);
  const setSearch = (patch: Partial<DeviceDetailSearch>) => void navigate({ search: (prev) => ({ ...prev, ...patch }), replace: true });

  const input = resolved.ok ? { id: device.id, from: resolved.from, to: resolved.to, interval: resolved.interval } : { id: device.id };
  const series = useQuery({ ...q.telemetry.series.options(input), enabled: resolved.ok, placeholderData: keepPreviousData });
  const showsData = (series.data?.total ?? 0) > 0;
  useEffect(() => onData(showsData), [showsData, onData]);

  function chooseRange(range: RangeKey) {
    if (range !== "custom") return setSearch({ range: range === "1h" ? undefined : range, from: undefined, to: undefined });
    // A custom range starts as the range shown now, to be adjusted.
    setSearch({ range, from: resolved.ok ? resolved.from : search.from, to: resolved.ok ? resolved.to : search.to });
  }

  const toolbar = (
    <div className="toolbar telemetry-toolbar">
      <div className="field">
        <span className="field__label" id="telemetry-range-label">Range</span>
        <div className="segmented" role="group" aria-labelledby="telemetry-range-label">
          {(Object.keys(RANGE_LABELS) as RangeKey[]).map((r) => (
            <button key={r} type="button" className="segmented__option" aria-pressed={resolved.range === r} onClick={() => chooseRange(r)}>
              {RANGE_LABELS[r]}
            </button>
          ))}
        </div>
      </div>
      {resolved.range === "custom" && (
        <>
          <div className="field">
            <label htmlFor="telemetry-from">From</label>
            <input id="telemetry-from" className="input" type="datetime-local" value={toLocalInput(search.from)} onChange={(e) => setSearch({ from: fromLocalInput(e.target.value) })} />
          </div>
          <div className="field">
            <label htmlFor="telemetry-to">To</label>
            <input id="telemetry-to" className="input" type="datetime-local" value={toLocalInput(search.to)} onChange={(e) => setSearch({ to: fromLocalInput(e.target.value) })} />
          </div>
        </>
      )}
      <div className="field">
        <label htmlFor="telemetry-interval">Interval</label>
        <select
          id="telemetry-interval"
          className="select"
          value={resolved.ok && resolved.intervalChosen ? resolved.interval : ""}
          onChange={(e) => setSearch({ interval: (e.target.value || undefined) as Interval | undefined })}
        >
          <option value="">Automatic{resolved.ok && !resolved.intervalChosen ? ` (${INTERVAL_LABELS[resolved.interval]})` : ""}</option>
          {INTERVALS.map((i) => {
            const allowed = !resolved.ok || resolved.allowed.includes(i);
            return <option key={i} value={i} disabled={!allowed}>{INTERVAL_LABELS[i]}{allowed ? "" : " (range too long)"}</option>;
          })}
        </select>
      </div>
      <span className="spacer" />
      {series.isFetching && <span className="spinner" role="status" aria-label="Updating" style={{ width: 16, height: 16 }} />}
    </div>
  );

  let body;
  if (!resolved.ok) body = <Empty title="Choose a time range">{resolved.problem}</Empty>;
  else if (series.isPending) body = <Loading label="Loading telemetry" />;
  else if (series.isError) body = <ErrorState error={series.error} what="this device's telemetry" retry={() => series.refetch()} />;
  else if (series.data.total === 0) {
    body = (
      <Empty
        title="This device has sent no telemetry in this range"
        action={resolved.range !== "7d" && <Button onClick={() => chooseRange("7d")}>Show the last 7 days</Button>}
      >
        {formatDateTime(resolved.from)} – {formatDateTime(resolved.to)}
      </Empty>
    );
  } else {
    body = <Charts deviceId={device.id} buckets={series.data.data} interval={series.data.interval as Interval} from={resolved.from} to={resolved.to} />;
  }

  return (
    <Card title="History" flush>
      {toolbar}
      <div className="card__body">{body}</div>
      {resolved.ok && series.data && series.data.total > 0 && (
        <p className="card-footnote telemetry-footnote">
          {counts.format(series.data.total)} snapshots in {counts.format(series.data.data.length)} buckets of {INTERVAL_LABELS[series.data.interval as Interval]}.
          CPU, memory, disk and containers are averaged per bucket, restarts show the highest count the agent reported, errors are summed.
          Gaps are where the device sent nothing. Drag across a chart to zoom in; double-click to zoom out.
        </p>
      )}
    </Card>
  );
}

function Charts({ deviceId, buckets, interval, from, to }: { deviceId: string; buckets: Bucket[]; interval: Interval; from: string; to: string }) {
  const xRange = useMemo<[number, number]>(() => [Date.parse(from) / 1000, Date.parse(to) / 1000], [from, to]);
  const columns = useMemo(
    () => bucketsToColumnSets(buckets, interval, CHARTS.map((c) => c.series.map((s) => s.metric))),
    [buckets, interval],
  );
  const seriesOf = useMemo(() => CHARTS.map((c) => c.series.map(({ label, color }) => ({ label, color }))), []);
  return (
    <div className="telemetry-charts">
      {CHARTS.map((c, i) => (
        <section key={c.id} className={`telemetry-chart telemetry-chart--${c.id}`} aria-labelledby={`chart-${c.id}`}>
          <h3 id={`chart-${c.id}`}>{c.title}</h3>
          <TimeSeriesChart
            data={columns[i]}
            series={seriesOf[i]}
            unit={c.unit}
            label={`${c.title} over the chosen range`}
            xRange={xRange}
            height={c.id === "resources" ? 240 : 180}
            syncKey={`telemetry-${deviceId}`}
          />
        </section>
      ))}
    </div>
  );
}
