-- Objects every layout shares: the id sequence, the growth procedure and the
-- record of archive runs.  Loaded after the layout's own file (layout_*.sql),
-- which defines t and the procedure bench_maybe_run(total bigint).

-- Archive runs made while growing (one row per run that moved rows).
CREATE TABLE IF NOT EXISTS bench_runs (
	run_no serial PRIMARY KEY,
	table_rows bigint NOT NULL,		-- ids handed out when the run started
	rows_moved bigint NOT NULL,
	seconds float8 NOT NULL,
	how text NOT NULL,				-- 'sql' (WITH m AS (DELETE ...) INSERT ...) or 'archive_cluster'
	finished_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Grows t (whatever t is: a table or a view) to "target" ids, as the seed's
-- workload does, but in batches: each batch inserts "batch" rows (ts = the
-- time of insertion, sequential ids, random customer 0-9999, pad 0-200
-- characters) and updates as many distinct rows among the last "hour_rows"
-- ids (the seed's "last hour"), so inserts and updates are 1:1.  After each
-- batch the layout's bench_maybe_run() decides whether to archive.
-- Statements are planned afresh for each batch (EXECUTE), as the tables
-- grow; bench.sh calls this in chunks of 100,000 rows, so that the
-- cumulative statistics are reported and autovacuum sees the changes (a
-- backend reports them only between top-level statements).  "parts"
-- sessions may grow t side by side, session "part" updating only ids with
-- id % parts = part: their updates never touch the same rows.
CREATE OR REPLACE PROCEDURE bench_grow(target bigint, batch int DEFAULT 1000, hour_rows int DEFAULT 3600,
									   part int DEFAULT 0, parts int DEFAULT 1)
LANGUAGE plpgsql AS $$
DECLARE
	total bigint;
	ids int[];
BEGIN
	PERFORM set_config('synchronous_commit', 'off', false);
	SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO total FROM t_id_seq;
	WHILE total < target LOOP
		EXECUTE 'INSERT INTO t (ts, id, cid, pad)
				 SELECT clock_timestamp(), nextval(''t_id_seq''), floor(random() * 10000)::int,
						repeat(''*'', floor(random() * 201)::int)
				 FROM generate_series(1, $1)' USING least(batch, target - total)::int;
		total := currval('t_id_seq');
		SELECT array_agg(total - g) INTO ids
		FROM (SELECT g FROM generate_series(0, hour_rows - 1) g
			  WHERE (total - g) % parts = part ORDER BY random() LIMIT batch) s;
		-- a row the other part's run or compaction moved meanwhile fails the
		-- update with 40001: done again, as a client retries
		LOOP
			BEGIN
				EXECUTE 'UPDATE t SET pad = repeat(''#'', floor(random() * 201)::int) WHERE id = ANY ($1)' USING ids;
				EXIT;
			EXCEPTION WHEN serialization_failure THEN
				NULL;
			END;
		END LOOP;
		COMMIT;
		CALL bench_maybe_run(total);
		COMMIT;
	END LOOP;
END $$;

-- Buffers (shared hit + read, top plan node) touched by the seed's "select
-- all" for customer c, from EXPLAIN (ANALYZE, BUFFERS), and its rows.
CREATE OR REPLACE FUNCTION bench_buffers(rel text, c int, OUT buffers bigint, OUT nrows bigint)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	buffers := NULL;
	FOR line IN EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT TEXT)
								SELECT * FROM %s WHERE cid = %s ORDER BY ts', rel, c) LOOP
		IF line ~ '^Planning' THEN EXIT; END IF;
		IF nrows IS NULL AND line ~ 'rows=\d+' THEN
			nrows := substring(line from 'rows=(\d+)')::bigint;
		END IF;
		IF buffers IS NULL AND line ~ 'Buffers: shared' THEN
			buffers := coalesce(substring(line from 'hit=(\d+)')::bigint, 0)
					 + coalesce(substring(line from 'read=(\d+)')::bigint, 0);
		END IF;
	END LOOP;
END $$;

-- Where "select all" for customer c reads (a diagnosis of bench_buffers):
-- per table the plan scans, the buffers of its scan node (its index and its
-- heap, from EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)) and the heap pages
-- that hold the customer's rows there (so index buffers = buffers - heap
-- pages, a page visited twice counted once).
CREATE OR REPLACE FUNCTION bench_buffers_split(rel text, c int, OUT relname text, OUT buffers bigint,
											   OUT heap_pages bigint)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
	node jsonb;
BEGIN
	EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON)
					SELECT * FROM %s WHERE cid = %s ORDER BY ts', rel, c) INTO plan;
	FOR node IN SELECT n FROM jsonb_path_query(plan, 'strict $.**') n
				WHERE jsonb_typeof(n) = 'object' AND n ? 'Relation Name' LOOP
		relname := node->>'Relation Name';
		buffers := (node->>'Shared Hit Blocks')::bigint + (node->>'Shared Read Blocks')::bigint;
		EXECUTE format('SELECT count(DISTINCT (ctid::text::point)[0]) FROM ONLY %I WHERE cid = %s', relname, c)
			INTO heap_pages;
		RETURN NEXT;
	END LOOP;
END $$;

-- What the pgbench sessions wait for while an archive run (of either design)
-- or a compaction is running: one row per session and 50-ms sample.  Stops when it has
-- ended, or after max_s seconds.
CREATE TABLE IF NOT EXISTS bench_waits (at timestamptz NOT NULL DEFAULT clock_timestamp(), wait text NOT NULL);
CREATE OR REPLACE PROCEDURE bench_sample_waits(max_s float8) LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
	started boolean := false;
	running boolean;
BEGIN
	LOOP
		SELECT EXISTS (SELECT 1 FROM pg_stat_activity
					   WHERE state = 'active' AND pid <> pg_backend_pid()
						 AND (query ~ '(archive_cluster_run|archive_cluster_compact|sql_archive_run)\('
							  OR query ~ '^VACUUM t_archive' OR application_name = 'pg_repack')) INTO running;
		IF running THEN
			started := true;
			INSERT INTO bench_waits (wait)
			SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU (no wait event)')
			FROM pg_stat_activity WHERE application_name = 'pgbench' AND state = 'active';
		END IF;
		EXIT WHEN (started AND NOT running) OR extract(epoch FROM clock_timestamp() - t0) > max_s;
		COMMIT;		-- a fresh pg_stat_activity snapshot next time
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
