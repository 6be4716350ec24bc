/* archive_cluster--1.0--1.1.sql: pacing by effect (issue 42) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION archive_cluster UPDATE TO '1.1'" to load this file. \quit

/*
 * The run history: of a run's or compaction's paced time, the part it waited
 * for lagging standbys and subscribers (the rest: it slept for its WAL rate,
 * which pacing by effect sets from others' commit latency; detail says how).
 */
ALTER TABLE archive_cluster_run_log ADD COLUMN paced_replicas interval NOT NULL DEFAULT '0';

CREATE OR REPLACE VIEW archive_cluster_runs AS
SELECT run_id,
	   relation,
	   relation_name,
	   kind,
	   started_at,
	   finished_at,
	   finished_at - started_at AS duration,
	   paced,
	   rows_moved,
	   bytes_written,
	   batches,
	   started_by,
	   run_as,
	   -- errors and keys only for roles that may read the table, row security
	   -- not applying (not once it is gone)
	   CASE WHEN @extschema@.archive_cluster_details_visible(relation) THEN error END AS error,
	   rows_refused,
	   rows_busy,
	   CASE WHEN @extschema@.archive_cluster_details_visible(relation) THEN left_behind END AS left_behind,
	   detail,
	   paced_replicas
FROM archive_cluster_run_log;

/*
 * Running jobs (with the library preloaded; else no rows), a call's as the
 * worker's: one row per job, as pg_stat_progress_cluster has for CLUSTER.
 * A role sees the jobs that run as a role it has the privileges of (a
 * table's owner), and pg_read_all_stats every job, as pg_stat_activity.
 */
CREATE FUNCTION archive_cluster_progress(
	OUT pid integer,
	OUT datid oid,
	OUT relid oid,
	OUT run_as oid,
	OUT kind text,
	OUT worker boolean,
	OUT started_at timestamptz,
	OUT phase text,
	OUT batches integer,
	OUT rows_planned bigint,
	OUT rows_done bigint,
	OUT wal_bytes bigint,
	OUT rate_mb double precision,
	OUT pace_reason text,
	OUT paced_us bigint,
	OUT replica_wait_us bigint,
	OUT replica_lag_bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_progress'
LANGUAGE C STRICT VOLATILE ROWS 4;

CREATE VIEW archive_cluster_progress AS
SELECT p.pid, p.datid, d.datname,
	   CASE WHEN d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
			THEN p.relid::pg_catalog.regclass END AS relation,
	   p.kind,
	   CASE WHEN p.worker THEN 'worker' ELSE 'manual' END AS started_by,
	   pg_catalog.pg_get_userbyid(p.run_as) AS run_as,
	   p.started_at,
	   p.phase,
	   p.batches,
	   p.rows_planned,
	   p.rows_done,
	   p.wal_bytes,
	   pg_catalog.round(p.rate_mb::pg_catalog.numeric, 1) AS rate_mb,
	   p.pace_reason,
	   pg_catalog.make_interval(secs => p.paced_us OPERATOR(pg_catalog./) 1e6) AS paced,
	   pg_catalog.make_interval(secs => p.replica_wait_us OPERATOR(pg_catalog./) 1e6) AS replica_wait,
	   p.replica_lag_bytes
FROM archive_cluster_progress() p
LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) p.datid;

GRANT SELECT ON archive_cluster_progress TO PUBLIC;

/* The workers: what their job is doing (archive_cluster_progress). */
CREATE OR REPLACE VIEW archive_cluster_workers AS
SELECT w.slot, w.pid, w.datid, d.datname, w.launched_at, w.started_at, w.activity, w.relid,
	   CASE WHEN d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
			THEN w.relid::pg_catalog.regclass END AS relation,
	   p.phase,
	   p.rows_planned,
	   p.rows_done,
	   pg_catalog.round(p.rate_mb::pg_catalog.numeric, 1) AS rate_mb,
	   p.pace_reason
FROM archive_cluster_workers() w
LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) w.datid
LEFT JOIN archive_cluster_progress() p ON p.pid OPERATOR(pg_catalog.=) w.pid;

/*
 * What pacing by effect compares (with the library preloaded; else no
 * rows): the commits that wrote, timed by each session, while no job wrote
 * ("quiet", lately: halved every 4 s of quiet) and while one did ("busy",
 * since start-up), with their p50, p90 and p99 in ms.
 */
CREATE FUNCTION archive_cluster_commit_latency(
	OUT histogram text,
	OUT commits bigint,
	OUT p50_ms double precision,
	OUT p90_ms double precision,
	OUT p99_ms double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_commit_latency'
LANGUAGE C STRICT VOLATILE ROWS 2;

CREATE VIEW archive_cluster_commit_latency AS
SELECT * FROM archive_cluster_commit_latency();

REVOKE ALL ON FUNCTION archive_cluster_commit_latency() FROM PUBLIC;
REVOKE ALL ON archive_cluster_commit_latency FROM PUBLIC;
GRANT EXECUTE ON FUNCTION archive_cluster_commit_latency() TO pg_monitor;
GRANT SELECT ON archive_cluster_commit_latency TO pg_monitor;
