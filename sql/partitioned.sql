-- Partitioned tables (mode => 'partitioned'): registration, the leaves and
-- which are closed, a pass over a closed leaf, refusals.
CREATE TABLE pt (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text)
	PARTITION BY RANGE (ts);
CREATE TABLE pt_old PARTITION OF pt FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE pt_mid PARTITION OF pt FOR VALUES FROM ('2020-01-02') TO ('2020-01-03')
	PARTITION BY HASH (cid);
CREATE TABLE pt_mid_a PARTITION OF pt_mid FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pt_mid_b PARTITION OF pt_mid FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE pt_now PARTITION OF pt FOR VALUES FROM ('2020-01-03') TO (MAXVALUE);
CREATE TABLE pt_def PARTITION OF pt DEFAULT;

-- refused: no index in the cluster key's order
SELECT try($$SELECT archive_cluster_register('pt', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned')$$);
CREATE INDEX pt_cid_ts_desc ON pt (cid DESC, ts);
SELECT try($$SELECT archive_cluster_register('pt', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned')$$);
CREATE INDEX pt_cid_ts ON pt (cid, ts);
-- refused: a partition, batch_rows, an unknown mode, the wrong mode for a partitioned table
SELECT try($$SELECT archive_cluster_register('pt_old', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned')$$);
SELECT try($$SELECT archive_cluster_register('pt', '{cid,ts}', 'ts', '1 hour', batch_rows => 10, mode => 'partitioned')$$);
SELECT try($$SELECT archive_cluster_register('pt', '{cid,ts}', 'ts', '1 hour', mode => 'partition')$$);
SELECT try($$SELECT archive_cluster_register('pt', '{cid,ts}', 'ts', '1 hour')$$);
SELECT try($$SELECT archive_cluster_register('pt_old', '{cid,ts}', 'ts', '1 hour')$$);
SELECT try($$SELECT archive_cluster_register('pt', '{cid,pad}', 'ts', '1 hour', mode => 'partitioned')$$);
SELECT try($$SELECT archive_cluster_register('pt', '{cid,ts}', 'id', '1 hour', mode => 'partitioned')$$);
CREATE TABLE plain (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
SELECT try($$SELECT archive_cluster_register('plain', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned')$$);

-- registered: no lock stronger than SHARE UPDATE EXCLUSIVE, nothing renamed
BEGIN;
SELECT archive_cluster_register('pt', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned');
SELECT mode FROM pg_locks WHERE locktype = 'relation' AND relation = 'pt'::regclass
	AND pid = pg_backend_pid() ORDER BY mode;
COMMIT;
SELECT relation, cluster_by, age_column, hot_window FROM archive_cluster_partitioned WHERE relation = 'pt'::regclass;
SELECT count(*) AS config_rows FROM archive_cluster_config WHERE relation = 'pt'::regclass;
SELECT try($$SELECT archive_cluster_register('pt', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned')$$);

-- rows interleaved by customer, as they arrive
INSERT INTO pt SELECT g, g % 50, '2020-01-01'::timestamptz + g * interval '4 s', repeat('x', 100)
	FROM generate_series(1, 30000) g;
INSERT INTO pt SELECT g, g % 50, now() - interval '10 min', 'hot' FROM generate_series(30001, 30100) g;
INSERT INTO pt_def VALUES (0, 1, '1999-12-31', 'old default row');
CREATE INDEX ON pt_def (ts);

SELECT leaf, parent, bound, closed, closed_by, passes FROM archive_cluster_partitions('pt') ORDER BY leaf::text;

-- before: pages per key in a closed leaf
SELECT round(avg(pages), 1) AS pages_per_key FROM
	(SELECT cid, count(DISTINCT (ctid::text::point)[0]) AS pages FROM pt_old GROUP BY cid) k;
CREATE TEMP TABLE before AS SELECT id, cid, ts, pad FROM pt;

SELECT rows_rewritten, rows_busy, pages_written > 0 AS wrote, gave_way, resumed
	FROM archive_cluster_pass_leaf('pt_old');
-- after: each key on about the pages its rows need; no row lost or changed
SELECT round(avg(pages), 1) AS pages_per_key FROM
	(SELECT cid, count(DISTINCT (ctid::text::point)[0]) AS pages FROM pt_old GROUP BY cid) k;
SELECT count(*) AS differing FROM
	((SELECT * FROM before EXCEPT ALL SELECT id, cid, ts, pad FROM pt)
	 UNION ALL (SELECT id, cid, ts, pad FROM pt EXCEPT ALL SELECT * FROM before)) d;
-- the rows are read in cluster order, page after page
SELECT bool_and(ordered) AS in_cluster_order FROM
	(SELECT (cid, ts) >= lag((cid, ts)) OVER (ORDER BY ctid) OR lag(cid) OVER (ORDER BY ctid) IS NULL AS ordered
	 FROM pt_old) o;
SELECT leaf, passes, rows_rewritten, settled_at IS NOT NULL AS settled, resumes
	FROM archive_cluster_partitions('pt') WHERE passes > 0;

-- a sub-partition closed by its parent's bound, the DEFAULT partition by its rows
SELECT rows_rewritten FROM archive_cluster_pass_leaf('pt_mid_a');
SELECT rows_rewritten FROM archive_cluster_pass_leaf('pt_def');
-- after VACUUM, the next pass moves the rows to the front, and VACUUM truncates
SELECT pg_relation_size('pt_old') / 8192 AS pages_after_one_pass;
VACUUM pt_old;
SELECT rows_rewritten, to_front FROM archive_cluster_pass_leaf('pt_old');
VACUUM pt_old;
SELECT pg_relation_size('pt_old') / 8192 AS pages_after_two_passes;
SELECT count(*) AS differing FROM
	((SELECT * FROM before EXCEPT ALL SELECT id, cid, ts, pad FROM pt)
	 UNION ALL (SELECT id, cid, ts, pad FROM pt EXCEPT ALL SELECT * FROM before)) d;

-- refused: open leaves, the partitioned tables, another table, read-only
SELECT try($$SELECT archive_cluster_pass_leaf('pt_now')$$);
SELECT try($$SELECT archive_cluster_pass_leaf('pt_mid')$$);
SELECT try($$SELECT archive_cluster_pass_leaf('pt')$$);
SELECT try($$SELECT archive_cluster_pass_leaf('plain')$$);
BEGIN READ ONLY;
SELECT try($$SELECT archive_cluster_pass_leaf('pt_old')$$);
ROLLBACK;
-- another owner may neither look nor pass
CREATE ROLE ac_part_other;
SET ROLE ac_part_other;
SELECT try($$SELECT * FROM archive_cluster_partitions('pt')$$);
SELECT try($$SELECT archive_cluster_pass_leaf('pt_old')$$);
SELECT try($$SELECT * FROM archive_cluster_leaves$$);
SELECT try($$SELECT archive_cluster_unregister('pt')$$);
RESET ROLE;
-- a leaf given to another role is refused
ALTER TABLE pt_mid_b OWNER TO ac_part_other;
SELECT try($$SELECT archive_cluster_pass_leaf('pt_mid_b')$$);
ALTER TABLE pt_mid_b OWNER TO CURRENT_USER;

-- a dropped leaf's state goes with it; partitions created later need no call
DROP TABLE pt_mid_a;
SELECT count(*) AS leaves_state FROM archive_cluster_leaves WHERE leaf::text = 'pt_mid_a';
CREATE TABLE pt_new PARTITION OF pt FOR VALUES FROM ('2019-01-01') TO ('2019-01-02');
SELECT leaf, closed, closed_by FROM archive_cluster_partitions('pt') WHERE leaf = 'pt_new'::regclass;

-- unregister: forgotten, rows stay
SELECT archive_cluster_unregister('pt');
SELECT count(*) AS registered FROM archive_cluster_partitioned WHERE relation::text <> 'wkp';
SELECT count(*) AS leaves FROM archive_cluster_leaves WHERE relation::text <> 'wkp';
SELECT count(*) AS rows FROM pt;
SELECT try($$SELECT archive_cluster_pass_leaf('pt_old')$$);

-- dropping a registered partitioned table forgets it
SELECT archive_cluster_register('pt', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned');
SELECT rows_rewritten > 0 AS moved FROM archive_cluster_pass_leaf('pt_old');
DROP TABLE pt;
SELECT count(*) AS registered FROM archive_cluster_partitioned WHERE relation::text <> 'wkp';
SELECT count(*) AS leaves FROM archive_cluster_leaves WHERE relation::text <> 'wkp';
DROP TABLE plain;
DROP ROLE ac_part_other;

-- archive_cluster_run() on a partitioned table: the due closed leaves, recorded
CREATE TABLE pr (id int NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text)
	PARTITION BY RANGE (ts);
CREATE TABLE pr_1 PARTITION OF pr FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE pr_2 PARTITION OF pr FOR VALUES FROM ('2020-01-02') TO ('2020-01-03');
CREATE TABLE pr_now PARTITION OF pr FOR VALUES FROM ('2020-01-03') TO (MAXVALUE);
CREATE INDEX ON pr (cid, ts);
INSERT INTO pr SELECT g, g % 20, '2020-01-01'::timestamptz + g * interval '10 s', repeat('y', 80)
	FROM generate_series(1, 17000) g;
INSERT INTO pr SELECT g, g % 20, now(), 'hot' FROM generate_series(17001, 17100) g;
SELECT archive_cluster_register('pr', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned');
-- one partition per call, unless max_batches says more
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('pr');
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('pr', max_batches => 5);
SELECT kind, relation_name, rows_moved, rows_busy, detail ~ '^leaf public\.pr_[12] \(first pass\): \d+ pages; ' AS detail_ok
	FROM archive_cluster_runs WHERE relation = 'pr'::regclass ORDER BY run_id;
-- nothing due until VACUUM frees the pages the first pass emptied; then a
-- tail pass moves the rows beyond the pages the leaf needs onto them, and
-- the VACUUM after it truncates the file to about what the rows need
SELECT table_name, status, rows_moved FROM archive_cluster_run('pr');
VACUUM pr_1;
SELECT pg_relation_size('pr_1') / 8192 AS pr_1_pages_before_tail;
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('pr');
SELECT detail ~ '^leaf public\.pr_1 \(tail\)' AS tail_pass FROM archive_cluster_runs
	WHERE relation = 'pr'::regclass ORDER BY run_id DESC LIMIT 1;
VACUUM pr_1;
SELECT pg_relation_size('pr_1') / 8192 AS pr_1_pages_after_tail;
SELECT round(avg(pages), 1) AS pr_1_pages_per_key FROM
	(SELECT cid, count(DISTINCT (ctid::text::point)[0]) AS pages FROM pr_1 GROUP BY cid) k;
-- rows written into a passed leaf since (a backfill) make it due again,
-- once VACUUM removed the index entries of the rows the last pass moved
VACUUM pr_2;
SELECT table_name, status, rows_moved FROM archive_cluster_run('pr');
VACUUM pr_2;
SELECT table_name, status FROM archive_cluster_run('pr');
INSERT INTO pr SELECT g, g % 20, '2020-01-02'::timestamptz + (g - 20000) * interval '20 s', 'backfill'
	FROM generate_series(20001, 24000) g;
-- measured once after each VACUUM (autovacuum's, after so many inserts)
SELECT table_name, status FROM archive_cluster_run('pr');
VACUUM pr_2;
SELECT table_name, status, rows_moved FROM archive_cluster_run('pr');
SELECT table_name, status FROM archive_cluster_run('pr');
SELECT detail ~ '^leaf public\.pr_2 \(rows written since\)' AS backfill_passed FROM archive_cluster_runs
	WHERE relation = 'pr'::regclass ORDER BY run_id DESC LIMIT 1;
SELECT round(avg(pages), 1) AS pr_2_pages_per_key FROM
	(SELECT cid, count(DISTINCT (ctid::text::point)[0]) AS pages FROM pr_2 GROUP BY cid) k;
-- max_batches: leaves per call; force: every closed leaf again
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('pr', force => true, max_batches => 1);
-- without a relation: registered tables and partitioned tables the caller owns
SELECT table_name, status FROM archive_cluster_run() WHERE table_name = 'pr'::regclass;
SELECT leaf, passes, settled_at IS NOT NULL AS settled FROM archive_cluster_partitions('pr') ORDER BY 1;
-- compaction does not apply
SELECT try($$SELECT * FROM archive_cluster_compact('pr')$$);
DROP TABLE pr;

-- archive_cluster_fragmentation(leaf, key) on a leaf partition of a
-- registered partitioned table, before and after its passes: it reads the
-- leaf's (cid, ts) index, so it reports each key's pages as the index points
-- to them: scattered before, the same plus the new pages after a pass (the
-- moved rows' entries stay until VACUUM), about the ideal after that VACUUM.
CREATE TABLE pf (id int NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text)
	PARTITION BY RANGE (ts);
CREATE TABLE pf_1 PARTITION OF pf FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE pf_now PARTITION OF pf FOR VALUES FROM ('2020-01-02') TO (MAXVALUE);
CREATE INDEX ON pf (cid, ts);
-- 40 customers, one row each in turn: every page holds rows of every customer
INSERT INTO pf SELECT g, g % 40, '2020-01-01'::timestamptz + g * interval '5 s', repeat('z', 100)
	FROM generate_series(1, 12000) g;
INSERT INTO pf SELECT g, g % 40, now(), 'hot' FROM generate_series(12001, 12040) g;
SELECT archive_cluster_register('pf', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned');
ANALYZE pf_1;
SELECT checksum('pf_1') AS pf_before \gset
-- the real pages per key of the leaf's rows (from their ctid) and their ideal
CREATE TEMP VIEW pf_real AS
	SELECT round(avg(pages), 1) AS pages, round(avg(ideal), 1) AS ideal FROM key_pages('pf_1', 'cid');
-- before: every key sampled, each on about all the pages of the leaf
SELECT tier, table_name, index_name, table_rows, table_pages, keys_sampled, rows_sampled,
	   round(avg_pages_per_key::numeric, 1) AS avg_pages, max_pages_per_key,
	   round(ideal_pages_per_key::numeric, 1) AS ideal,
	   fragmentation_ratio > 20 AS fragmented, rows_per_page_touched < 2 AS about_one_row_per_page
FROM archive_cluster_fragmentation('pf_1', 'cid');
SELECT round(f.avg_pages_per_key::numeric, 1) = r.pages AS avg_is_real, f.table_pages = pg_relation_size('pf_1') / 8192 AS pages_are_real
FROM archive_cluster_fragmentation('pf_1', 'cid') f, pf_real r;
SELECT avg_pages_per_key AS frag_before, ideal_pages_per_key AS ideal_before, table_pages AS pages_before
FROM archive_cluster_fragmentation('pf_1', 'cid') \gset
-- a pass: the rows clustered, but the index still points to the old versions too
SELECT rows_rewritten, rows_busy, gave_way FROM archive_cluster_pass_leaf('pf_1');
SELECT * FROM pf_real;
-- (each key's rows counted twice, so its ideal too)
SELECT rows_sampled AS rows_with_dead_entries, table_pages > 1.9 * :pages_before AS doubled,
	   round(avg_pages_per_key::numeric, 1) AS avg_pages, avg_pages_per_key > :frag_before AS old_and_new_pages,
	   round(ideal_pages_per_key::numeric, 1) AS ideal, ideal_pages_per_key > :ideal_before AS ideal_of_twice_the_rows
FROM archive_cluster_fragmentation('pf_1', 'cid');
-- VACUUM removes the old entries: each key on about its ideal pages
VACUUM pf_1;
SELECT tier, keys_sampled, rows_sampled, round(avg_pages_per_key::numeric, 1) AS avg_pages,
	   max_pages_per_key, round(ideal_pages_per_key::numeric, 1) AS ideal,
	   fragmentation_ratio < 1.5 AS clustered, avg_pages_per_key * 10 < :frag_before AS tenfold_fewer,
	   avg_pages_per_key <= ideal_pages_per_key + 1 AS within_ideal_plus_one,
	   rows_per_page_touched > 40 AS full_pages
FROM archive_cluster_fragmentation('pf_1', 'cid');
SELECT round(f.avg_pages_per_key::numeric, 1) = r.pages AS avg_is_real
FROM archive_cluster_fragmentation('pf_1', 'cid') f, pf_real r;
-- the tail pass and the VACUUM after it: the file shrinks, the keys stay together
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('pf');
SELECT detail ~ '^leaf public\.pf_1 \(tail\)' AS tail_pass FROM archive_cluster_runs
	WHERE relation = 'pf'::regclass ORDER BY run_id DESC LIMIT 1;
VACUUM pf_1;
SELECT table_pages < 1.1 * :pages_before AS file_back_to_size, rows_sampled,
	   fragmentation_ratio < 1.5 AS clustered, avg_pages_per_key * 10 < :frag_before AS tenfold_fewer
FROM archive_cluster_fragmentation('pf_1', 'cid');
SELECT round(f.avg_pages_per_key::numeric, 1) = r.pages AS avg_is_real
FROM archive_cluster_fragmentation('pf_1', 'cid') f, pf_real r;
SELECT checksum('pf_1') = :'pf_before' AS same_rows;
-- a registered partitioned table: the view lists none of it, the function
-- refuses its root (call it on a leaf), and on a leaf the key defaults to
-- the first cluster_by column
SELECT count(*) AS in_view FROM archive_cluster_fragmentation WHERE relation = 'pf'::regclass;
SELECT try($$SELECT * FROM archive_cluster_fragmentation('pf', 'cid')$$);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('pf')$$);
SELECT (SELECT avg_pages_per_key FROM archive_cluster_fragmentation('pf_1')) =
	   (SELECT avg_pages_per_key FROM archive_cluster_fragmentation('pf_1', 'cid')) AS key_from_cluster_by;
DROP VIEW pf_real;
DROP TABLE pf;

-- a tail pass lays rows out in the order of the cluster index's operator class
-- (here: customers in descending order), as the whole pass does
CREATE FUNCTION int4_rev_cmp(int, int) RETURNS int LANGUAGE sql IMMUTABLE STRICT
	AS 'SELECT pg_catalog.btint4cmp($2, $1)';
CREATE OPERATOR CLASS int4_rev_ops FOR TYPE int4 USING btree AS
	OPERATOR 1 >, OPERATOR 2 >=, OPERATOR 3 =, OPERATOR 4 <=, OPERATOR 5 <,
	FUNCTION 1 int4_rev_cmp(int, int);
CREATE TABLE rev (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text)
	PARTITION BY RANGE (ts);
CREATE TABLE rev_old PARTITION OF rev FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE INDEX ON rev (cid int4_rev_ops, ts);
SELECT archive_cluster_register('rev', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned');
INSERT INTO rev SELECT g, g % 50, '2020-01-01'::timestamptz + g * interval '2 s', repeat('x', 100)
	FROM generate_series(1, 20000) g;
CREATE TEMP TABLE rev_before AS SELECT * FROM rev;
SELECT rows_rewritten FROM archive_cluster_pass_leaf('rev_old');
VACUUM rev_old;
SELECT rows_rewritten > 0 AS moved, to_front FROM archive_cluster_pass_leaf('rev_old');
VACUUM rev_old;
-- every row after the one before it in the index's order: customers descending
SELECT bool_and(ordered) AS in_index_order FROM
	(SELECT cid <= lag(cid) OVER (ORDER BY ctid) OR lag(cid) OVER (ORDER BY ctid) IS NULL AS ordered
	 FROM rev_old) o;
SELECT count(*) AS differing FROM
	((SELECT * FROM rev_before EXCEPT ALL SELECT * FROM rev)
	 UNION ALL (SELECT * FROM rev EXCEPT ALL SELECT * FROM rev_before)) d;
SELECT archive_cluster_unregister('rev');
DROP TABLE rev;
DROP OPERATOR FAMILY int4_rev_ops USING btree;
DROP FUNCTION int4_rev_cmp(int, int);

-- one call passes at most 32 partitions (each is a subtransaction)
CREATE TABLE many (id int NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL) PARTITION BY RANGE (ts);
DO $$
BEGIN
	FOR d IN 0..33 LOOP
		EXECUTE format('CREATE TABLE many_%s PARTITION OF many FOR VALUES FROM (%L) TO (%L)', d,
					   '2020-01-01'::date + d, '2020-01-01'::date + d + 1);
	END LOOP;
END
$$;
CREATE INDEX ON many (cid, ts);
INSERT INTO many SELECT g, g % 7, '2020-01-01'::timestamptz + g * interval '1 h' FROM generate_series(0, 34 * 24 - 1) g;
SELECT archive_cluster_register('many', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned');
SELECT status, batches FROM archive_cluster_run('many', max_batches => 100);
SELECT status, batches FROM archive_cluster_run('many', max_batches => 100);
SELECT count(*) FILTER (WHERE passes > 0) AS passed, count(*) AS leaves FROM archive_cluster_partitions('many');
SELECT archive_cluster_unregister('many');
DROP TABLE many;
