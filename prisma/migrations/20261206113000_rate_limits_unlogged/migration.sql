-- Request budgets are counters of the last minutes: nothing worth a write-ahead log record.
-- Every heartbeat with the rate limits on adds a point to its device's row; unlogged, that
-- costs no WAL and no flush at commit. After a crash PostgreSQL empties the table: every
-- budget starts afresh, which is what a restart of a single process does to its memory
-- limiters too (docs/benchmarks.md, "Rate limits on the heartbeat's path").
ALTER TABLE "rate_limits" SET UNLOGGED;
