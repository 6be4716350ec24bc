/* archive_cluster--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION archive_cluster" to load this file. \quit

/*
 * Registered tables.  Relations are stored as regclass so that pg_dump writes
 * them by name and pg_restore resolves them to the new OIDs.
 */
CREATE TABLE archive_cluster_config (
	relation regclass PRIMARY KEY,		-- view mode: the view, with the table's old name;
										-- table mode: the table itself
	current_table regclass NOT NULL,	-- view mode: the original table, renamed <t>_current;
										-- table mode: the table (its own rows, ONLY <t>)
	archive_table regclass NOT NULL,	-- <t>_archive, rows appended in cluster order
										-- (table mode: an inheritance child of <t>)
	mode text NOT NULL DEFAULT 'view' CHECK (mode IN ('view', 'table')),
	cluster_by name[] NOT NULL,
	age_column name NOT NULL,
	hot_window interval NOT NULL,
	batch_rows bigint,					-- NULL: distinct keys x rows per page
	lock_timeout interval,				-- its runs' and compactions' lock waits;
										-- NULL: archive_cluster.lock_timeout
	registered_at timestamptz NOT NULL DEFAULT now(),
	registered_by name NOT NULL			-- the role that called archive_cluster_register()
);

/* One row per run that did something or failed. */
CREATE TABLE archive_cluster_run_log (
	run_id bigserial PRIMARY KEY,
	relation regclass,
	relation_name text NOT NULL,
	started_at timestamptz NOT NULL,
	finished_at timestamptz NOT NULL,
	rows_moved bigint NOT NULL,
	batches integer NOT NULL,
	started_by text NOT NULL,			-- 'manual' or 'worker'
	run_as name NOT NULL,
	error text,
	paced interval NOT NULL DEFAULT '0',	-- slept for run_max_wal_rate
	-- eligible rows the run left in <t>_current: refused by the archive (a
	-- constraint), or changed or locked by other transactions meanwhile
	rows_refused bigint NOT NULL DEFAULT 0,
	rows_busy bigint NOT NULL DEFAULT 0,
	left_behind text,					-- the first of each: key and reason
	-- 'archive': a run moved rows into <t>_archive; 'compaction': rows of
	-- <t>_archive were rewritten in cluster order (rows_moved of them)
	-- 'alter': archive_cluster_alter() changed its settings (detail: how)
	kind text NOT NULL DEFAULT 'archive' CHECK (kind IN ('archive', 'compaction', 'alter')),
	bytes_written bigint NOT NULL DEFAULT 0,	-- of the rows written into <t>_archive
	detail text							-- 'alter': "setting: old -> new; ..."
);
-- each run keeps its table's newest archive_cluster.run_log_max_rows rows
CREATE INDEX archive_cluster_run_log_relation ON archive_cluster_run_log (relation, run_id);

SELECT pg_catalog.pg_extension_config_dump('archive_cluster_config', '');
SELECT pg_catalog.pg_extension_config_dump('archive_cluster_run_log', '');
SELECT pg_catalog.pg_extension_config_dump('archive_cluster_run_log_run_id_seq', '');

/*
 * The loose pages of each archive: the pages runs appended and the ends of
 * keys a compaction wrote together, which the next compaction rewrites
 * (pages a compaction filled with one key's rows are left out).  Page
 * numbers of the archive's heap, so not dumped: after a restore, compaction
 * starts again from the following runs.
 */
CREATE TABLE archive_cluster_loose (
	relation regclass PRIMARY KEY
		REFERENCES archive_cluster_config ON DELETE CASCADE,
	blocks int8multirange NOT NULL,
	batches integer NOT NULL,			-- runs' batches since the last compaction, its own loose pages counting as one
	compacted_at timestamptz			-- the last compaction
);

REVOKE ALL ON archive_cluster_config, archive_cluster_run_log, archive_cluster_loose FROM PUBLIC;
-- the view triggers read the configuration as the user running the statement
GRANT SELECT ON archive_cluster_config TO PUBLIC;

/*
 * A registered table dropped without unregistering it (DROP VIEW on the
 * view, or DROP TABLE ... CASCADE on one of its tables) is forgotten: its
 * configuration row goes with it, so that the views and runs of the other
 * tables keep working and the name can be registered again.  Whatever table
 * remains keeps its rows.  In table mode, the last guard index of a tier
 * cannot be dropped (DROP INDEX, or DROP COLUMN of one of its columns):
 * without it, rows written to the tier would not be checked against the
 * other one.
 */
CREATE FUNCTION archive_cluster_forget_dropped()
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
REVOKE ALL ON FUNCTION archive_cluster_forget_dropped() FROM PUBLIC;

CREATE EVENT TRIGGER archive_cluster_forget_dropped ON sql_drop
	EXECUTE FUNCTION archive_cluster_forget_dropped();

/*
 * A foreign key cannot find archived rows (its checks read the referenced
 * table alone), and a run deletes rows without the key's triggers: a new
 * foreign key that references a registered table or one of its tiers is
 * refused when it is created, as registration refuses an existing one.
 */
CREATE FUNCTION archive_cluster_refuse_references()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
BEGIN
	SELECT con.conname, con.conrelid::regclass AS referencing,
		   con.confrelid::regclass AS referenced
	INTO r
	FROM pg_event_trigger_ddl_commands() d
	JOIN pg_constraint con ON con.conrelid = d.objid AND con.contype = 'f'
	JOIN @extschema@.archive_cluster_config c
	  ON con.confrelid IN (c.relation, c.current_table, c.archive_table)
	WHERE d.classid = 'pg_class'::regclass
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'foreign key "%" of % references %, which is registered with archive_cluster',
			r.conname, r.referencing, r.referenced
			USING ERRCODE = 'feature_not_supported',
				  HINT = 'A foreign key finds the rows it references in the table alone, never among archived rows.';
	END IF;
END
$$;
REVOKE ALL ON FUNCTION archive_cluster_refuse_references() FROM PUBLIC;

CREATE EVENT TRIGGER archive_cluster_refuse_references ON ddl_command_end
	WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE')
	EXECUTE FUNCTION archive_cluster_refuse_references();

/*
 * Table mode: a unique index created on a tier after registration is
 * checked across both tiers once it has its counterpart on the other one
 * (tier_validate.c).  CREATE INDEX reports the index; ALTER TABLE reports
 * the table, whose new unique indexes are those whose catalog row this
 * transaction wrote.
 */
CREATE FUNCTION archive_cluster_validate_unique(index regclass, created_now boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'archive_cluster_validate_unique'
LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION archive_cluster_validate_unique(regclass, boolean) FROM PUBLIC;

CREATE FUNCTION archive_cluster_check_new_indexes()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT i.indexrelid, bool_and(i.indexrelid <> d.objid) AS created_now
		FROM pg_event_trigger_ddl_commands() d
		JOIN pg_index i ON i.indexrelid = d.objid OR i.indrelid = d.objid
		JOIN @extschema@.archive_cluster_config cfg
		  ON cfg.mode = 'table' AND i.indrelid IN (cfg.current_table, cfg.archive_table)
		WHERE d.classid = 'pg_class'::regclass AND i.indisunique
		GROUP BY 1 ORDER BY 1
	LOOP
		PERFORM @extschema@.archive_cluster_validate_unique(r.indexrelid, r.created_now);
	END LOOP;
END
$$;
REVOKE ALL ON FUNCTION archive_cluster_check_new_indexes() FROM PUBLIC;

CREATE EVENT TRIGGER archive_cluster_check_new_indexes ON ddl_command_end
	WHEN TAG IN ('CREATE INDEX', 'ALTER TABLE')
	EXECUTE FUNCTION archive_cluster_check_new_indexes();

CREATE FUNCTION archive_cluster_register(
	relation regclass,
	cluster_by name[],
	age_column name,
	hot_window interval DEFAULT '1 hour',
	batch_rows bigint DEFAULT NULL,
	lock_timeout interval DEFAULT '1 s',
	lock_retries integer DEFAULT 10,
	mode text DEFAULT 'view')
RETURNS void
AS 'MODULE_PATHNAME', 'archive_cluster_register'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

/*
 * A registered table's settings changed without unregistering it; NULL
 * keeps a setting, batch_rows 0 returns to the automatic threshold,
 * lock_timeout 0 to archive_cluster.lock_timeout (a table's own only
 * shortens that setting's wait).  Returns what changed
 * (also in archive_cluster_runs, kind 'alter').
 */
CREATE FUNCTION archive_cluster_alter(
	relation regclass,
	hot_window interval DEFAULT NULL,
	batch_rows bigint DEFAULT NULL,
	lock_timeout interval DEFAULT NULL,
	cluster_by name[] DEFAULT NULL)
RETURNS text
AS 'MODULE_PATHNAME', 'archive_cluster_alter'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

-- the default of an identity column on a registered view (see triggers.c)
CREATE FUNCTION archive_cluster_identity_nextval(view regclass, column_name name)
RETURNS bigint
AS 'MODULE_PATHNAME', 'archive_cluster_identity_nextval'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION archive_cluster_unregister(
	relation regclass,
	lock_timeout interval DEFAULT '1 s',
	lock_retries integer DEFAULT 10)
RETURNS bigint
AS 'MODULE_PATHNAME', 'archive_cluster_unregister'
LANGUAGE C CALLED ON NULL INPUT VOLATILE;

CREATE FUNCTION archive_cluster_run(
	relation regclass DEFAULT NULL,
	force boolean DEFAULT false,
	max_batches integer DEFAULT NULL,
	OUT table_name regclass,
	OUT status text,
	OUT rows_moved bigint,
	OUT batches integer,
	OUT duration interval)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_run'
LANGUAGE C CALLED ON NULL INPUT VOLATILE ROWS 1;

/* Threshold and its inputs, computed from the tables' statistics. */
CREATE FUNCTION archive_cluster_compact(
	relation regclass DEFAULT NULL,
	force boolean DEFAULT false,
	OUT table_name regclass,
	OUT status text,
	OUT rows_rewritten bigint,
	OUT bytes_rewritten bigint,
	OUT duration interval)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_compact'
LANGUAGE C CALLED ON NULL INPUT VOLATILE ROWS 1;

CREATE FUNCTION archive_cluster_table_state(
	relation regclass,
	OUT threshold_rows bigint,
	OUT threshold_source text,
	OUT distinct_keys double precision,
	OUT rows_per_page double precision,
	OUT current_rows_estimate bigint,
	OUT eligible_rows_estimate bigint,
	OUT archive_rows_estimate bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'archive_cluster_table_state'
LANGUAGE C STRICT STABLE;

CREATE FUNCTION archive_cluster_view_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'archive_cluster_view_trigger'
LANGUAGE C;

/*
 * Table mode: every unique index of <t> holds across <t> and <t>_archive.
 * Each tier has an index of access method archive_cluster_guard on its
 * primary key and age column: it stores nothing and is never scanned, but
 * every row written to the tier reaches it, and is checked against the
 * other tier once the executor is done with it.  Its operator class takes
 * any type and has no operators.
 */
CREATE FUNCTION archive_cluster_guard_handler(internal)
RETURNS index_am_handler
AS 'MODULE_PATHNAME', 'archive_cluster_guard_handler'
LANGUAGE C;

CREATE ACCESS METHOD archive_cluster_guard TYPE INDEX HANDLER archive_cluster_guard_handler;

CREATE OPERATOR CLASS archive_cluster_guard_ops
	DEFAULT FOR TYPE anyelement USING archive_cluster_guard AS STORAGE anyelement;

/*
 * The BEFORE ROW trigger that archive_cluster adds to the statement's own
 * triggers of an INSERT ... ON CONFLICT into a table in table mode
 * (on_conflict.c); it refuses any other use.
 */
CREATE FUNCTION archive_cluster_unique_check()
RETURNS trigger
AS 'MODULE_PATHNAME', 'archive_cluster_unique_check'
LANGUAGE C;

/* Writes the rows INSERTed through a registered view at the end of each statement. */
CREATE FUNCTION archive_cluster_view_flush()
RETURNS trigger
AS 'MODULE_PATHNAME', 'archive_cluster_view_flush'
LANGUAGE C;

/*
 * May the caller see the keys and errors of registered table "relation"
 * (the run history, the last error)?  Where PostgreSQL shows a key in its
 * own errors (BuildIndexValueDescription): the caller may read the table,
 * and no row-level security applies to the caller on it or on its tiers.
 */
CREATE FUNCTION archive_cluster_details_visible(relation oid)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT coalesce(pg_catalog.has_table_privilege($1, 'SELECT'), false)
   AND NOT pg_catalog.row_security_active($1)
   AND NOT EXISTS (SELECT FROM @extschema@.archive_cluster_config c
				   WHERE c.relation OPERATOR(pg_catalog.=) $1::pg_catalog.regclass
					 AND (pg_catalog.row_security_active(c.current_table)
						  OR pg_catalog.row_security_active(c.archive_table)))
$$;

CREATE VIEW archive_cluster_tables AS
SELECT c.relation,
	   c.mode,
	   c.current_table,
	   c.archive_table,
	   c.cluster_by,
	   c.age_column,
	   c.hot_window,
	   c.batch_rows,
	   c.lock_timeout,
	   s.threshold_rows,
	   s.threshold_source,
	   s.distinct_keys,
	   s.rows_per_page,
	   s.current_rows_estimate,
	   s.eligible_rows_estimate,
	   s.archive_rows_estimate,
	   r.last_run_at,
	   r.last_run_rows,
	   -- errors only for roles that may read the table, row security not applying
	   CASE WHEN @extschema@.archive_cluster_details_visible(c.relation) THEN r.last_error END AS last_error,
	   coalesce(r.runs, 0) AS runs,
	   coalesce(r.rows_moved, 0) AS total_rows_moved,
	   -- compaction: the archive's loose pages, and the history
	   coalesce((SELECT sum(pg_catalog.upper(b) - pg_catalog.lower(b)) FROM pg_catalog.unnest(lo.blocks) b), 0)::bigint AS loose_pages,
	   coalesce(lo.batches, 0) AS loose_batches,
	   lo.compacted_at AS last_compaction_at,
	   coalesce(k.compactions, 0) AS compactions,
	   coalesce(k.rows_rewritten, 0) AS total_rows_rewritten,
	   -- the logical replication subscriptions that write into its tables: runs
	   -- and compactions leave it alone (archive_cluster.allow_on_subscriber)
	   (SELECT pg_catalog.array_agg(DISTINCT sub.subname)
		FROM pg_catalog.pg_subscription_rel sr
			 JOIN pg_catalog.pg_subscription sub ON sub.oid OPERATOR(pg_catalog.=) sr.srsubid
		WHERE sr.srrelid OPERATOR(pg_catalog.=) ANY (ARRAY[c.current_table, c.archive_table]::pg_catalog.oid[]))
		 AS subscriptions,
	   c.registered_at,
	   c.registered_by
FROM archive_cluster_config c
	 CROSS JOIN LATERAL archive_cluster_table_state(c.relation) s
	 LEFT JOIN archive_cluster_loose lo ON lo.relation = c.relation
	 LEFT JOIN LATERAL (
		SELECT max(l.started_at) AS last_run_at,
			   (array_agg(l.rows_moved ORDER BY l.run_id DESC))[1] AS last_run_rows,
			   (array_agg(l.error ORDER BY l.run_id DESC))[1] AS last_error,
			   count(*) AS runs,
			   sum(l.rows_moved)::bigint AS rows_moved
		FROM archive_cluster_run_log l
		WHERE l.relation = c.relation AND l.kind = 'archive') r ON true
	 LEFT JOIN LATERAL (
		SELECT count(*) AS compactions,
			   sum(l.rows_moved)::bigint AS rows_rewritten
		FROM archive_cluster_run_log l
		WHERE l.relation = c.relation AND l.kind = 'compaction' AND l.error IS NULL) k ON true;

CREATE VIEW archive_cluster_runs AS
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
	   detail
FROM archive_cluster_run_log;

GRANT SELECT ON archive_cluster_tables, archive_cluster_runs TO PUBLIC;

/*
 * Statistics.  Not open to PUBLIC: fragmentation reads indexes of any table
 * (granted to pg_stat_scan_tables, like pgstattuple), buffers read the
 * shared buffer headers (granted to pg_monitor, like pg_buffercache).
 */
CREATE FUNCTION archive_cluster_fragmentation(
	relation regclass,
	key_column name DEFAULT NULL,
	sample_keys integer DEFAULT 200,
	seed bigint DEFAULT 0,
	OUT tier text,
	OUT table_name regclass,
	OUT index_name regclass,
	OUT table_rows bigint,
	OUT table_pages bigint,
	OUT keys_sampled integer,
	OUT rows_sampled bigint,
	OUT avg_pages_per_key double precision,
	OUT p95_pages_per_key double precision,
	OUT max_pages_per_key bigint,
	OUT ideal_pages_per_key double precision,
	OUT fragmentation_ratio double precision,
	OUT rows_per_page_touched double precision,
	OUT loose_pages_per_key double precision,
	OUT compactable_pages_per_key double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_fragmentation'
LANGUAGE C CALLED ON NULL INPUT VOLATILE ROWS 3;

CREATE FUNCTION archive_cluster_buffers(
	relation regclass DEFAULT NULL,
	OUT relation regclass,
	OUT tier text,
	OUT object regclass,
	OUT kind text,
	OUT buffers bigint,
	OUT dirty_buffers bigint,
	OUT pct_of_shared_buffers double precision,
	OUT avg_usage_count double precision,
	OUT rows_per_page_touched double precision,
	OUT capacity_rows bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_buffers'
LANGUAGE C CALLED ON NULL INPUT VOLATILE ROWS 6;

/* Fragmentation of every registered table that has an index on its key. */
CREATE VIEW archive_cluster_fragmentation AS
SELECT c.relation, f.*
FROM archive_cluster_config c
CROSS JOIN LATERAL archive_cluster_fragmentation(c.relation, NULL, 100) f
WHERE EXISTS (
	SELECT FROM pg_catalog.pg_index i
	JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid
	JOIN pg_catalog.pg_am am ON am.oid OPERATOR(pg_catalog.=) ic.relam
	JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid
		AND a.attnum OPERATOR(pg_catalog.=) i.indkey[0]
	WHERE i.indrelid OPERATOR(pg_catalog.=) c.current_table
	  AND am.amname OPERATOR(pg_catalog.=) 'btree'
	  AND a.attname OPERATOR(pg_catalog.=) c.cluster_by[1]
	  AND i.indisvalid AND i.indpred IS NULL);

CREATE VIEW archive_cluster_buffers AS
SELECT * FROM archive_cluster_buffers();

REVOKE ALL ON FUNCTION archive_cluster_fragmentation(regclass, name, integer, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION archive_cluster_buffers(regclass) FROM PUBLIC;
REVOKE ALL ON archive_cluster_fragmentation, archive_cluster_buffers FROM PUBLIC;
GRANT EXECUTE ON FUNCTION archive_cluster_fragmentation(regclass, name, integer, bigint) TO pg_stat_scan_tables;
GRANT SELECT ON archive_cluster_fragmentation TO pg_stat_scan_tables;

/*
 * How full the leaf pages of a btree index are (used over usable space, as
 * pgstatindex's avg_leaf_density; deleted pages count as empty), from a
 * sample of its pages.  A fresh build fills them to 0.9.
 */
CREATE FUNCTION archive_cluster_index_fill(index regclass, sample_pages integer DEFAULT 200)
RETURNS double precision
AS 'MODULE_PATHNAME', 'archive_cluster_index_fill'
LANGUAGE C STRICT VOLATILE;
REVOKE ALL ON FUNCTION archive_cluster_index_fill(regclass, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION archive_cluster_index_fill(regclass, integer) TO pg_stat_scan_tables;
GRANT EXECUTE ON FUNCTION archive_cluster_buffers(regclass) TO pg_monitor;
GRANT SELECT ON archive_cluster_buffers TO pg_monitor;

/*
 * The background workers (with the library preloaded; else no rows): one row
 * per worker of the pool, and one per database the launcher serves.
 */
CREATE FUNCTION archive_cluster_workers(
	OUT slot integer,
	OUT pid integer,
	OUT datid oid,
	OUT launched_at timestamptz,
	OUT started_at timestamptz,
	OUT activity text,
	OUT relid oid)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_pool_workers'
LANGUAGE C STRICT VOLATILE ROWS 2;

CREATE VIEW archive_cluster_workers AS
SELECT w.slot, w.pid, w.datid, d.datname, w.launched_at, w.started_at, w.activity, w.relid,
	   CASE WHEN d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
			THEN w.relid::pg_catalog.regclass END AS relation
FROM archive_cluster_workers() w
LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) w.datid;

CREATE FUNCTION archive_cluster_databases(
	OUT datid oid,
	OUT extension text,
	OUT slot integer,
	OUT last_worker_start timestamptz,
	OUT last_worker_end timestamptz,
	OUT worker_starts bigint,
	OUT work_left boolean,
	OUT next_worker_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'archive_cluster_pool_databases'
LANGUAGE C STRICT VOLATILE ROWS 10;

CREATE VIEW archive_cluster_databases AS
SELECT s.datid, d.datname, s.extension, s.slot, s.last_worker_start, s.last_worker_end,
	   s.worker_starts, s.work_left, s.next_worker_at
FROM archive_cluster_databases() s
JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) s.datid;

REVOKE ALL ON FUNCTION archive_cluster_workers(), archive_cluster_databases() FROM PUBLIC;
REVOKE ALL ON archive_cluster_workers, archive_cluster_databases FROM PUBLIC;
GRANT EXECUTE ON FUNCTION archive_cluster_workers(), archive_cluster_databases() TO pg_monitor;
GRANT SELECT ON archive_cluster_workers, archive_cluster_databases TO pg_monitor;
