-- Objects of bench/partitions.sh (loaded once into its database):
--   part_src(rows, days)   the seed's rows, generated once into the table src;
--   part_create(tbl)       a partitioned copy of them, daily partitions;
--   part_index(tbl)        its indexes (id) and (cid, ts), built after the fill;
--   part_cluster_index(leaf)  a leaf's (cid, ts) index (for CLUSTER);
--   part_select_all(...)   the seed's "select all" of a sample of customers:
--                          buffers (EXPLAIN (ANALYZE, BUFFERS)) and heap pages.

-- What every copy is made of: one row per table of the bench.
CREATE TABLE part_bench (
	rows bigint NOT NULL,
	days int NOT NULL,
	t_first timestamp NOT NULL,		-- the lower bound of the oldest partition
	t_open timestamp NOT NULL		-- the lower bound of the newest (open) partition
);

-- The seed's rows: ids 1..rows in ts order, spread evenly from t_first to
-- the start of the current hour, so that the newest partition (from t_open =
-- the hour 12 hours ago, to a day later) holds the last 12 hours and is open
-- (it holds the hot window, and the inserts of the bench for 12 hours or
-- more), the days - 1 others are closed (their upper bound 12 hours ago or
-- more); 10,000 customers and pads of 0-200 characters interleaved as the
-- seed's inserts leave them (as bench/lib/seed_table.sql).  The same rows,
-- in the same partitions, every time (setseed; times relative to the hour
-- of the call).  src is written in id order (one INSERT ... SELECT of
-- generate_series).
CREATE PROCEDURE part_src(p_rows bigint, p_days int) LANGUAGE plpgsql AS $$
DECLARE
	t_open timestamp := date_trunc('hour', localtimestamp) - interval '12 hours';
	t_first timestamp := t_open - (p_days - 1) * interval '1 day';
	t_last timestamp := date_trunc('hour', localtimestamp);
BEGIN
	INSERT INTO part_bench VALUES (p_rows, p_days, t_first, t_open);
	PERFORM setseed(0.5);
	CREATE UNLOGGED TABLE src (ts timestamp NOT NULL, id int NOT NULL, cid int NOT NULL, pad varchar(200) NOT NULL);
	INSERT INTO src (ts, id, cid, pad)
	SELECT t_first + (g - 1) * ((t_last - t_first) / p_rows), g,
		   floor(random() * 10000)::int, repeat('*', floor(random() * 201)::int)
	FROM generate_series(1, p_rows) g;
END $$;

-- tbl: partitioned by range of ts, one partition a day (tbl_p00, tbl_p01,
-- ...: p00 the oldest), the rows of src copied in their arrival order (id),
-- the sequence tbl_id_seq at the last id.  No index yet (part_index).
CREATE PROCEDURE part_create(tbl text) LANGUAGE plpgsql AS $$
DECLARE
	b part_bench;
	w int;
BEGIN
	SELECT * INTO b FROM part_bench;
	w := greatest(2, length((b.days - 1)::text));
	EXECUTE format('CREATE TABLE %I (ts timestamp NOT NULL, id int NOT NULL, cid int NOT NULL,
					pad varchar(200) NOT NULL) PARTITION BY RANGE (ts)', tbl);
	FOR k IN 0 .. b.days - 1 LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
					   tbl || '_p' || lpad(k::text, w, '0'), tbl,
					   b.t_first + k * interval '1 day', b.t_first + (k + 1) * interval '1 day');
	END LOOP;
	EXECUTE format('CREATE SEQUENCE %I', tbl || '_id_seq');
	PERFORM set_config('synchronize_seqscans', 'off', true);
	EXECUTE format('INSERT INTO %I SELECT * FROM src ORDER BY id', tbl);
	EXECUTE format('SELECT setval(%L, %s)', tbl || '_id_seq', b.rows);
END $$;

CREATE PROCEDURE part_index(tbl text) LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE INDEX %I ON %I (id)', tbl || '_id', tbl);
	EXECUTE format('CREATE INDEX %I ON %I (cid, ts)', tbl || '_cid_ts', tbl);
END $$;

-- The leaf partitions of tbl, oldest first, with whether they are closed
-- (their upper bound at most t_open: every row older than the hot window).
CREATE FUNCTION part_leaves(tbl text, OUT leaf regclass, OUT closed boolean)
RETURNS SETOF record LANGUAGE sql AS $$
	SELECT c.oid::regclass, c.relname < tbl || '_p' || lpad((b.days - 1)::text, greatest(2, length((b.days - 1)::text)), '0')
	FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid, part_bench b
	WHERE h.inhparent = tbl::regclass
	ORDER BY c.relname
$$;

-- The leaf's partition of the index tbl_cid_ts.
CREATE FUNCTION part_cluster_index(leaf regclass) RETURNS regclass LANGUAGE sql AS $$
	SELECT i.indexrelid::regclass
	FROM pg_index i JOIN pg_inherits h ON h.inhrelid = i.indexrelid
	WHERE i.indrelid = leaf
	  AND h.inhparent = (((SELECT p.inhparent::regclass FROM pg_inherits p WHERE p.inhrelid = leaf)::text
						  || '_cid_ts')::regclass)
$$;

-- The seed's "select all" for each customer of cids, restricted to ts <
-- before (NULL: all partitions): buffers of the plan (shared hit + read,
-- from EXPLAIN (ANALYZE, BUFFERS), its top node: the whole plan, planning
-- not counted), its rows, and the heap pages that hold them (distinct
-- (partition, block) of their ctids).
CREATE FUNCTION part_select_all(tbl text, cids int[], before timestamp,
								OUT cid int, OUT nrows bigint, OUT buffers bigint, OUT heap_pages bigint)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
	plan jsonb;
	cond text := CASE WHEN before IS NULL THEN '' ELSE format(' AND ts < %L::timestamp', before) END;
BEGIN
	FOREACH cid IN ARRAY cids LOOP
		EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON)
						SELECT * FROM %I WHERE cid = %s%s ORDER BY ts', tbl, cid, cond) INTO plan;
		nrows := (plan->0->'Plan'->>'Actual Rows')::bigint;
		buffers := (plan->0->'Plan'->>'Shared Hit Blocks')::bigint + (plan->0->'Plan'->>'Shared Read Blocks')::bigint;
		EXECUTE format('SELECT count(DISTINCT (tableoid, (ctid::text::point)[0])) FROM %I WHERE cid = %s%s',
					   tbl, cid, cond) INTO heap_pages;
		RETURN NEXT;
	END LOOP;
END $$;

-- Heap and index sizes of tbl's closed or open leaves, in 8-kB pages.
CREATE FUNCTION part_sizes(tbl text, want_closed boolean, OUT heap_pages bigint, OUT index_pages bigint)
LANGUAGE sql AS $$
	SELECT sum(pg_relation_size(leaf)) / 8192, sum(pg_indexes_size(leaf)) / 8192
	FROM part_leaves(tbl) WHERE closed = want_closed
$$;

-- What the inserting sessions (pgbench) wait for: one row per session and
-- 50-ms sample, for secs seconds.
CREATE TABLE part_waits (label text NOT NULL, wait text NOT NULL);
CREATE PROCEDURE part_sample_waits(p_label text, secs float8) LANGUAGE plpgsql AS $$
DECLARE
	t_end timestamptz := clock_timestamp() + secs * interval '1 second';
BEGIN
	WHILE clock_timestamp() < t_end LOOP
		INSERT INTO part_waits
		SELECT p_label, coalesce(wait_event_type || ':' || wait_event, 'CPU (no wait event)')
		FROM pg_stat_activity WHERE application_name = 'pgbench' AND state = 'active';
		COMMIT;		-- a fresh pg_stat_activity snapshot next time
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
