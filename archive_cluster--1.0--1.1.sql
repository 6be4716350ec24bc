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

/*
 * Partitioned tables (mode => 'partitioned'): the partitioned table itself is
 * registered; nothing is renamed or created, and its leaf partitions are
 * found from it at every pass, so partitions created or dropped later (by
 * pg_partman or by hand) need no call.  Dumped like archive_cluster_config.
 */
CREATE TABLE archive_cluster_partitioned (
	relation regclass PRIMARY KEY,		-- the partitioned table
	cluster_by name[] NOT NULL,
	age_column name NOT NULL,
	hot_window interval NOT NULL,
	registered_at timestamptz NOT NULL DEFAULT now(),
	registered_by name NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('archive_cluster_partitioned', '');

/*
 * What the passes did to each leaf partition.  Positions in a leaf's heap
 * and its index, so not dumped: after a restore, every closed leaf is
 * passed again once.  A dropped leaf's row goes with it (sql_drop).
 */
CREATE TABLE archive_cluster_leaves (
	leaf regclass PRIMARY KEY,
	relation regclass NOT NULL
		REFERENCES archive_cluster_partitioned ON DELETE CASCADE,
	resume_at bytea,				-- a pass that gave way: the cluster key it
									-- stopped at, with its types (leaf_pass.c)
	passes integer NOT NULL DEFAULT 0,
	rows_rewritten bigint NOT NULL DEFAULT 0,
	last_pass_at timestamptz,
	settled_at timestamptz,			-- the last pass that went through to the end
	settled_blocks bigint,			-- the leaf's pages then
	checked_at timestamptz			-- the VACUUM after which it was last found not due
);
CREATE INDEX archive_cluster_leaves_relation ON archive_cluster_leaves (relation);

-- the run history: kind 'pass', a pass over a leaf partition (detail: which)
ALTER TABLE archive_cluster_run_log DROP CONSTRAINT archive_cluster_run_log_kind_check,
	ADD CONSTRAINT archive_cluster_run_log_kind_check
	CHECK (kind IN ('archive', 'compaction', 'alter', 'pass'));

REVOKE ALL ON archive_cluster_partitioned, archive_cluster_leaves FROM PUBLIC;

/* A dropped partitioned table, or leaf, is forgotten too. */
CREATE OR REPLACE FUNCTION archive_cluster_forget_dropped()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
BEGIN
	DELETE FROM @extschema@.archive_cluster_config c
	USING pg_event_trigger_dropped_objects() d
	WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0
	  AND d.objid IN (c.relation, c.current_table, c.archive_table);
	DELETE FROM @extschema@.archive_cluster_leaves l
	USING pg_event_trigger_dropped_objects() d
	WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0 AND d.objid = l.leaf;
	DELETE FROM @extschema@.archive_cluster_partitioned p
	USING pg_event_trigger_dropped_objects() d
	WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0 AND d.objid = p.relation;
	-- only for a command that drops an index (DROP INDEX, DROP COLUMN, ...)
	IF NOT EXISTS (SELECT FROM pg_event_trigger_dropped_objects() d WHERE d.object_type = 'index') THEN
		RETURN;
	END IF;
	SELECT tier::regclass AS tier INTO r
	FROM @extschema@.archive_cluster_config c,
		 unnest(ARRAY[c.current_table, c.archive_table]) AS tier
	WHERE c.mode = 'table'
	  AND NOT EXISTS (SELECT FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
					  JOIN pg_am am ON am.oid = ic.relam
					  WHERE i.indrelid = tier AND am.amname = 'archive_cluster_guard'
					    AND i.indisvalid AND i.indisready AND i.indislive)
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'cannot drop the archive_cluster_guard index of %', r.tier
			USING ERRCODE = 'dependent_objects_still_exist',
				  DETAIL = 'It keeps the unique indexes of a table registered in table mode unique across the table and its archive.',
				  HINT = 'Create another index of access method archive_cluster_guard on the table first, or unregister the table with archive_cluster_unregister().';
	END IF;
END
$$;

/*
 * The leaf partitions of a registered partitioned table: which are closed
 * (every row older than its hot window: by the leaf's bound, a parent's
 * bound, or its newest row) and what the passes did to each.
 */
CREATE FUNCTION archive_cluster_partitions(
	relation regclass,
	OUT leaf regclass,
	OUT parent regclass,
	OUT bound text,
	OUT closed boolean,
	OUT closed_by text,
	OUT pages bigint,
	OUT passes integer,
	OUT rows_rewritten bigint,
	OUT last_pass_at timestamptz,
	OUT settled_at timestamptz,
	OUT resumes boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_partitions'
LANGUAGE C STRICT VOLATILE;

/*
 * One pass over one closed leaf partition of a registered partitioned
 * table, in the caller's transaction: its rows rewritten in its cluster
 * index's order, each onto an empty page, online (ROW EXCLUSIVE on the leaf
 * alone).  It gives way between pages, at the end of the cluster key it is
 * in, to a session waiting for a lock on the leaf or for a row it moved,
 * and the next pass goes on from the next key.  to_front: it wrote onto
 * pages VACUUM freed, not at the end of the file.
 */
CREATE FUNCTION archive_cluster_pass_leaf(
	leaf regclass,
	OUT rows_rewritten bigint,
	OUT rows_busy bigint,
	OUT pages_written bigint,
	OUT gave_way boolean,
	OUT to_front boolean,
	OUT resumed boolean)
RETURNS record
AS 'MODULE_PATHNAME', 'archive_cluster_pass_leaf'
LANGUAGE C STRICT VOLATILE;
