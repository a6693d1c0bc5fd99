// The device's log lines: level, source and text filters (in the URL), either as history
// (newest first, paged back in time) or following live (SSE: new lines at the bottom as they
// arrive, pausable, at most FOLLOW_CAP lines kept so that a page left open for hours stays light).
import { memo, useEffect, useLayoutEffect, useRef, useState } from "react";
import { useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Pause, Play, RotateCw, Search, X } from "lucide-react";
import { q } from "../../api/query";
import { Button } from "../../ui/Button";
import { Card } from "../../ui/Card";
import { Pagination } from "../../ui/Pagination";
import { Empty, ErrorBox, ErrorState, Loading } from "../../ui/states";
import { useDebounced } from "../../ui/useDebounced";
import type { DeviceDetailSearch } from "../search";
import type { Device } from "../types";
import { formatPreciseDateTime } from "../../ui/time";
import { FOLLOW_CAP } from "./follow-buffer";
import { filterKey, formatLevels, LOG_LEVELS, logFilterOf, type LogFilter, type LogLevel, type LogLine } from "./logs";
import { FOLLOW_TAIL, useLogFollow, type FollowConnection } from "./useLogFollow";
import "./logs.css";

const PAGE = 100;
const LEVEL_TONE: Record<LogLevel, string> = { debug: "", info: "badge--accent", warn: "badge--warning", error: "badge--danger", fatal: "badge--danger" };
const numbers = new Intl.NumberFormat();

export function LogsTab({ device }: { device: Device }) {
  const search = useSearch({ from: "/app/devices/$deviceId" });
  const navigate = useNavigate({ from: "/devices/$deviceId" });
  const setSearch = (patch: Partial<DeviceDetailSearch>) => void navigate({ search: (prev) => ({ ...prev, ...patch }), replace: true });
  const filter = logFilterOf(search);
  const levels = filter.level ?? [];
  const sources = useQuery(q.logs.sources.options({ id: device.id }));

  // The text search reaches the URL (and the API) once typing pauses.
  const [text, setText] = useState(search.search ?? "");
  const settled = useDebounced(text);
  useEffect(() => {
    if ((settled.trim() || undefined) !== (search.search?.trim() || undefined)) setSearch({ search: settled.trim() || undefined });
  }, [settled]); // eslint-disable-line react-hooks/exhaustive-deps

  const filtered = levels.length > 0 || !!filter.source || !!filter.q;
  function toggleLevel(level: LogLevel) {
    setSearch({ level: formatLevels(levels.includes(level) ? levels.filter((l) => l !== level) : [...levels, level]) });
  }
  function clearFilters() {
    setText("");
    setSearch({ level: undefined, source: undefined, search: undefined });
  }

  const sourceNames = sources.data?.items.map((s) => s.source) ?? [];
  if (filter.source && !sourceNames.includes(filter.source)) sourceNames.push(filter.source);
  const following = search.follow === true;

  return (
    <Card title="Logs" flush actions={
      <div className="segmented" role="group" aria-label="Log view">
        <button type="button" className="segmented__option" aria-pressed={!following} onClick={() => setSearch({ follow: undefined })}>History</button>
        <button type="button" className="segmented__option" aria-pressed={following} onClick={() => setSearch({ follow: true })}>Follow live</button>
      </div>
    }>
      <div className="toolbar">
        <div className="field search-field">
          <label htmlFor="log-search">Search</label>
          <div className="input-icon">
            <Search aria-hidden="true" />
            <input id="log-search" className="input" type="search" maxLength={200} placeholder="Text in the message" value={text} onChange={(e) => setText(e.target.value)} />
          </div>
        </div>
        <div className="field">
          <label htmlFor="log-source">Source</label>
          <select id="log-source" className="select" value={filter.source ?? ""} onChange={(e) => setSearch({ source: e.target.value || undefined })}>
            <option value="">All sources</option>
            {sourceNames.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </div>
        <fieldset className="status-filter">
          <legend>Levels</legend>
          {LOG_LEVELS.map((l) => (
            <label key={l} className={`status-toggle badge ${LEVEL_TONE[l]}`}>
              <input type="checkbox" checked={levels.includes(l)} onChange={() => toggleLevel(l)} />
              {l}
            </label>
          ))}
        </fieldset>
        {filtered && <Button size="small" variant="ghost" icon={<X />} onClick={clearFilters}>Clear filters</Button>}
      </div>
      {following
        ? <LogFollow key={filterKey(filter)} deviceId={device.id} filter={filter} />
        : <LogHistory key={filterKey(filter)} deviceId={device.id} filter={filter} filtered={filtered} onFollow={() => setSearch({ follow: true })} />}
    </Card>
  );
}

/** Newest first, a page at a time. Paging back is anchored at the newest line seen, so that lines arriving meanwhile do not shift the pages. */
function LogHistory({ deviceId, filter, filtered, onFollow }: { deviceId: string; filter: LogFilter; filtered: boolean; onFollow: () => void }) {
  const [offset, setOffset] = useState(0);
  const [anchor, setAnchor] = useState<string>();
  const page = useQuery({ ...q.logs.list.options({ id: deviceId, ...filter, limit: PAGE, offset, to: anchor }), placeholderData: keepPreviousData });

  function goTo(next: number) {
    if (anchor === undefined && page.data?.items[0]) setAnchor(page.data.items[0].timestamp);
    setOffset(next);
  }
  const queryClient = useQueryClient();
  function newest() {
    // The first page seen before paging back is still in the cache (and fresh for 15 s): mark
    // every cached page stale, so that the newest lines are asked for, not shown from memory.
    void queryClient.invalidateQueries({ queryKey: q.logs.list.key() });
    setAnchor(undefined);
    setOffset(0);
  }

  if (page.isPending) return <Loading label="Loading log lines" />;
  if (page.isError) return <ErrorState error={page.error} what="this device's logs" retry={() => page.refetch()} />;
  const { items, total } = page.data;
  if (total === 0) {
    return filtered
      ? <Empty title="No log line matches these filters" />
      : <Empty title="No log lines yet" action={<Button onClick={onFollow}>Follow live</Button>}>The device's agent has not sent any log lines, or they are older than the retention period.</Empty>;
  }
  return (
    <>
      <div className="log-bar">
        <span className="muted">Newest first{anchor && <> · held at {formatPreciseDateTime(anchor)} while you page back</>}</span>
        <Button size="small" icon={<RotateCw />} onClick={newest} busy={page.isFetching}>Newest lines</Button>
      </div>
      <div className="table-wrap">
        <LogTable lines={items} caption="Log lines, newest first" />
      </div>
      <Pagination label="Log pages, newest first" offset={offset} limit={PAGE} total={total} onOffset={goTo} />
    </>
  );
}

function LogFollow({ deviceId, filter }: { deviceId: string; filter: LogFilter }) {
  const { buffer, connection, pause, resume, retryNow } = useLogFollow(deviceId, filter);
  const scroller = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);

  // Stay at the newest line while the reader is there; leave them alone once they scrolled up.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && atBottom.current) el.scrollTop = el.scrollHeight;
  }, [buffer.lines]);

  return (
    <>
      <div className="log-bar">
        <ConnectionBadge connection={connection} />
        <span className="muted" role="status">
          {numbers.format(buffer.lines.length)} {buffer.lines.length === 1 ? "line" : "lines"}
          {buffer.dropped > 0 && <> · keeping the newest {numbers.format(FOLLOW_CAP)}, {numbers.format(buffer.dropped)} older left the view (History has them)</>}
        </span>
        <span className="spacer" />
        {(connection.state === "reconnecting" || connection.state === "stopped") && (
          <Button size="small" icon={<RotateCw />} onClick={retryNow}>Reconnect now</Button>
        )}
        {buffer.paused
          ? <Button size="small" variant="primary" icon={<Play />} onClick={resume}>Resume{buffer.heldCount > 0 ? ` (${numbers.format(buffer.heldCount)} new)` : ""}</Button>
          : <Button size="small" icon={<Pause />} onClick={pause}>Pause</Button>}
      </div>
      {connection.state === "stopped" && <div className="card__body"><ErrorBox error={connection.error} /></div>}
      {buffer.paused && (
        <div className="log-paused" role="status">
          Paused: {buffer.heldCount === 0 ? "no new lines yet" : `${numbers.format(buffer.heldCount)} new ${buffer.heldCount === 1 ? "line" : "lines"} waiting`}.
          {buffer.heldCount > FOLLOW_CAP && ` Resuming shows the newest ${numbers.format(FOLLOW_CAP)}.`}
        </div>
      )}
      <div
        ref={scroller}
        className="log-scroll"
        tabIndex={0}
        aria-label="Followed log lines"
        onScroll={(e) => {
          const el = e.currentTarget;
          atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {buffer.lines.length === 0 ? (
          <Empty title={connection.state === "live" ? "Waiting for new lines" : "Connecting"}>
            The last {FOLLOW_TAIL} matching lines appear first, then each new line as the device sends it.
          </Empty>
        ) : (
          <LogTable lines={buffer.lines} caption="Followed log lines, oldest first" />
        )}
      </div>
    </>
  );
}

function ConnectionBadge({ connection }: { connection: FollowConnection }) {
  switch (connection.state) {
    case "live":
      return <span className="badge badge--success"><span className="badge__dot" aria-hidden="true" />Streaming</span>;
    case "connecting":
      return <span className="badge"><span className="spinner" aria-hidden="true" style={{ width: 10, height: 10 }} />Connecting</span>;
    case "reconnecting":
      return (
        <span className="badge badge--warning">
          Disconnected · {connection.retryInSeconds === null ? "reconnecting" : `retrying in ${connection.retryInSeconds} s`}
        </span>
      );
    case "stopped":
      return <span className="badge badge--danger">Stopped</span>;
  }
}

function LogTable({ lines, caption }: { lines: readonly LogLine[]; caption: string }) {
  return (
    <table className="table log-table">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Level</th>
            <th scope="col">Source</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {lines.map((line) => <LogRow key={line.id} line={line} />)}
      </tbody>
    </table>
  );
}

/** One line; memoised, so that new lines in follow mode render only themselves. */
const LogRow = memo(function LogRow({ line }: { line: LogLine }) {
  const level = line.level as LogLevel;
  return (
    <tr className={`log-row log-row--${level}`}>
      <td className="log-time"><time dateTime={line.timestamp}>{formatPreciseDateTime(line.timestamp)}</time></td>
      <td><span className={`badge log-level ${LEVEL_TONE[level] ?? ""}`}>{line.level}</span></td>
      <td className="log-source">{line.source}</td>
      <td className="log-message">{line.message}</td>
    </tr>
  );
});
