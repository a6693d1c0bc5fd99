// The service's own metrics (docs/observability.md): one prom-client registry per running
// service (tests run several side by side), created on first use and only when the metrics are
// exposed (METRICS_TOKEN or METRICS_PORT); otherwise `metricsOf` answers null and every hook
// is one WeakMap look-up. Hooks count where the work happens (a counter or histogram each);
// what a gauge shows is read at scrape time (ingest gate, pool, open streams), and the one
// database figure (deployments by status) is one grouped query cached a few seconds.
//
// Labels are bounded by construction: a procedure name or a route template (never a path
// with ids), a job kind, a writer name, an event name, an SQLSTATE class; never an
// organization or a device.
import client, { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Services } from "../../services.js";
import { perService } from "../../lib/per-service.js";
import type { GroupCommit } from "../../lib/group-commit.js";
import { eventBusOf } from "../../lib/events.js";
import { openLogStreamCount } from "../logs/stream-route.js";
import type { PruneResult } from "../telemetry/retention.js";

/** Request latencies: the heartbeat is a few ms, reads tens of ms, exports and syncs seconds. */
const REQUEST_SECONDS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** One group-commit statement: 1 ms to a second under load. */
const STATEMENT_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Rows of one group-commit statement (heartbeats at most 500, ingest at most 5,000). */
const STATEMENT_ROWS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000];
/** How late a job starts after it was due (poll interval 1 s; retention runs for up to 50 s). */
const LAG_SECONDS = [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600];
const JOB_SECONDS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300];

/** Deployments by status are read at most this often, whatever the scrape interval. */
export const DEPLOYMENT_STATUS_CACHE_MS = 5000;

/** The three ingest paths of an agent, and what became of a request. */
export type IngestKind = "heartbeat" | "telemetry" | "logs";
export type IngestOutcome = "accepted" | "rate_limited" | "busy" | "rejected" | "failed";

export function ingestOutcomeOf(status: number): IngestOutcome {
  if (status < 400) return "accepted";
  if (status === 429) return "rate_limited";
  if (status === 503) return "busy";
  return status < 500 ? "rejected" : "failed";
}

export function statusClassOf(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

export class ServiceMetrics {
  readonly registry = new Registry();

  readonly httpRequests = this.counter("fleet_http_requests_total", "HTTP requests answered, by route (procedure name or route template), method and status class", ["route", "method", "status_class"]);
  readonly httpDuration = this.histogram("fleet_http_request_duration_seconds", "Time from the request's arrival to its answer's last byte", REQUEST_SECONDS, ["route", "method"]);
  readonly ingestRequests = this.counter("fleet_agent_ingest_requests_total", "Agent heartbeats and telemetry/log batches: accepted, rate_limited (429), busy (503, ingest gate), rejected (other 4xx), failed (5xx)", ["kind", "outcome"]);
  readonly statementRows = this.histogram("fleet_group_commit_statement_rows", "Rows written by one group-commit statement", STATEMENT_ROWS, ["writer"]);
  readonly statementDuration = this.histogram("fleet_group_commit_statement_duration_seconds", "Time of one group-commit statement (successful or not)", STATEMENT_SECONDS, ["writer"]);
  readonly statementErrors = this.counter("fleet_db_statement_errors_total", "Failed database statements by SQLSTATE class (first two characters; 'none' without a code)", ["writer", "sqlstate_class"]);
  readonly jobRuns = this.counter("fleet_job_runs_total", "Job runs finished by this process, by kind and outcome (succeeded, failed)", ["kind", "outcome"]);
  readonly jobLag = this.histogram("fleet_job_lag_seconds", "How long after it was due a job was claimed", LAG_SECONDS, ["kind"]);
  readonly jobDuration = this.histogram("fleet_job_duration_seconds", "Time a job ran", JOB_SECONDS, ["kind"]);
  readonly retentionRows = this.counter("fleet_retention_deleted_rows_total", "Rows deleted by telemetry retention, by what they were", ["table"]);
  readonly retentionPartitions = this.counter("fleet_retention_dropped_partitions_total", "Partitions dropped whole by telemetry retention", ["table"]);
  readonly websockets = new Gauge({ name: "fleet_realtime_websockets_open", help: "Realtime WebSockets open in this process", registers: [this.registry] });
  readonly eventsPublished = this.counter("fleet_realtime_events_published_total", "Events published by this process (to its own subscribers and, with PostgreSQL, to the others)", ["event"]);
  readonly messagesDropped = this.counter("fleet_realtime_messages_dropped_total", "Realtime messages not sent: slow_consumer (the client's buffer was full; it is disconnected), oversized (NOTIFY payload too large to reach other processes)", ["reason"]);
  readonly deploymentReports = this.counter("fleet_deployment_reports_total", "Deployment states reported by agents (one per deployment per heartbeat that carries it)");

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []) {
    return new Counter<L>({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, buckets: number[], labelNames: readonly L[] = []) {
    return new Histogram<L>({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  /** A gauge read when scraped. */
  private scraped(name: string, help: string, read: () => number) {
    return new Gauge({ name, help, registers: [this.registry], collect() { this.set(read()); } });
  }

  private deploymentsCache: { at: number; rows: Promise<{ status: string; count: number }[]> } | null = null;

  constructor(private readonly services: Services) {
    client.collectDefaultMetrics({ register: this.registry, prefix: "fleet_" });
    const gate = services.ingestGate;
    this.scraped("fleet_ingest_gate_in_flight", "Telemetry and log batches holding a turn of the ingest gate", () => gate.inFlight);
    this.scraped("fleet_ingest_gate_waiting", "Telemetry and log batches waiting for a turn (bodies unread)", () => gate.queued);
    new Gauge({
      name: "fleet_ingest_gate_limit", help: "The ingest gate's turns (INGEST_CONCURRENCY) and queue length (INGEST_QUEUE_LENGTH)",
      labelNames: ["limit"] as const, registers: [this.registry],
      collect() {
        this.set({ limit: "concurrency" }, gate.limits.concurrency);
        this.set({ limit: "queue" }, gate.limits.queueLength);
      },
    });
    const pool = services.database.opened.pool;
    if (pool) {
      // pg's Pool; the embedded database (PGlite) is one connection without a pool: no such series.
      this.scraped("fleet_db_pool_connections", "Connections of the pool (DATABASE_POOL_SIZE at most)", () => pool.totalCount);
      this.scraped("fleet_db_pool_connections_in_use", "Connections of the pool checked out", () => pool.totalCount - pool.idleCount);
      this.scraped("fleet_db_pool_waiting", "Queries waiting for a connection of the pool", () => pool.waitingCount);
      this.scraped("fleet_db_pool_max_connections", "Connections the pool may open (DATABASE_POOL_SIZE)", () => pool.options.max ?? 10);
    }
    this.scraped("fleet_realtime_sse_streams_open", "Server-sent event streams (log follow) open in this process", () => openLogStreamCount(services));
    const metrics = this;
    eventBusOf(services).onPublish = (event) => this.eventsPublished.inc({ event });
    new Gauge({
      name: "fleet_deployments", help: "Deployments of all organizations by status (read at most every 5 s)",
      labelNames: ["status"] as const, registers: [this.registry],
      // The same figure in every process: one process's value, not their sum, when aggregated.
      aggregator: "first",
      async collect() {
        this.reset();
        for (const row of await metrics.deploymentsByStatus()) this.set({ status: row.status }, row.count);
      },
    });
  }

  /** One grouped query, shared by scrapes within DEPLOYMENT_STATUS_CACHE_MS. */
  private deploymentsByStatus(): Promise<{ status: string; count: number }[]> {
    const now = Date.now();
    if (!this.deploymentsCache || now - this.deploymentsCache.at > DEPLOYMENT_STATUS_CACHE_MS) {
      const rows = this.services.prisma.$queryRaw<{ status: string; count: number }[]>`
        SELECT "status", count(*)::int AS "count" FROM "Deployment" GROUP BY "status"`;
      this.deploymentsCache = { at: now, rows };
      rows.catch(() => (this.deploymentsCache = null));
    }
    return this.deploymentsCache.rows;
  }

  /** What one retention run removed. */
  observeRetention(result: PruneResult): void {
    const rows: [string, number][] = [
      ["telemetry_snapshots", result.snapshots], ["log_lines", result.logLines], ["orphan_rows", result.orphanRows],
      ["notification_deliveries", result.deliveries], ["realtime_tickets", result.tickets],
    ];
    for (const [table, n] of rows) this.retentionRows.inc({ table }, n);
    const partitions: [string, number][] = [
      ["telemetry_snapshots", result.snapshotPartitions], ["log_lines", result.logPartitions], ["telemetry_rollups", result.rollupPartitions],
    ];
    for (const [table, n] of partitions) this.retentionPartitions.inc({ table }, n);
  }

  /** A group-commit statement: its rows and time, or its failure's SQLSTATE class. */
  observeStatement(writer: string, rows: number, seconds: number, error?: unknown): void {
    this.statementDuration.observe({ writer }, seconds);
    if (error === undefined) this.statementRows.observe({ writer }, rows);
    else this.statementErrors.inc({ writer, sqlstate_class: sqlStateClassOf(error) });
  }
}

/** The first two characters of an SQLSTATE (23: integrity, 40: transaction rollback, 57: operator intervention, ...). */
export function sqlStateClassOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code.slice(0, 2) : "none";
}

/** Whether this service exposes its metrics (and so counts them). */
export function metricsEnabled(config: Services["config"]): boolean {
  return Boolean(config.METRICS_TOKEN || config.METRICS_PORT);
}

/** The metrics of one running service, or null when they are not exposed (nothing is counted). */
export const metricsOf = perService((services: Services): ServiceMetrics | null =>
  metricsEnabled(services.config) ? new ServiceMetrics(services) : null);

/** A group-commit writer of `services` whose statements are counted as `writer` (when metrics are on). */
export function observedWriter<W extends Pick<GroupCommit<unknown, unknown>, "onStatement">>(services: Services, writer: string, commit: W): W {
  const metrics = metricsOf(services);
  if (metrics) commit.onStatement = (rows, seconds, error) => metrics.observeStatement(writer, rows, seconds, error);
  return commit;
}
