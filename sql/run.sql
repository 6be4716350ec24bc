-- Runs: a 300,000-row table with 1,000 customers, rows scattered by customer.
CREATE TABLE t (ts timestamp NOT NULL, id int PRIMARY KEY, cid int NOT NULL, pad varchar(200) NOT NULL);
CREATE INDEX ON t (cid, ts);
INSERT INTO t
SELECT timestamp '2024-01-01' + i * interval '1 second', i, (i::bigint * 7919 % 1000)::int, repeat('x', (i * 37) % 200)
FROM generate_series(1, 300000) i;
ANALYZE t;
CREATE TEMP TABLE t_before AS SELECT checksum('t') AS sum;
-- scattered: each customer's 300 rows sit on about 300 pages
SELECT round(avg(pages)) AS avg_pages, round(avg(pages::numeric / ideal)) AS avg_ratio
FROM key_pages('t', 'cid');

SELECT archive_cluster_register('t', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
SELECT threshold_source, distinct_keys, threshold_rows = distinct_keys * rows_per_page AS seed_rule
FROM archive_cluster_tables WHERE relation = 't'::regclass;

-- nothing moves while fewer rows than the threshold are eligible
UPDATE archive_cluster_config SET batch_rows = 1000000 WHERE relation = 't'::regclass;
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('t');
UPDATE archive_cluster_config SET batch_rows = NULL WHERE relation = 't'::regclass;

SELECT table_name, status, rows_moved, batches FROM archive_cluster_run();
SELECT checksum('t') = (SELECT sum FROM t_before) AS same_rows;
SELECT (SELECT count(*) FROM t_current) AS current_rows, (SELECT count(*) FROM t_archive) AS archive_rows;
-- no row is in both tables
SELECT count(*) AS in_both FROM t_current c JOIN t_archive a USING (id);

-- clustered: a customer's archived rows span at most 1.5x the ideal pages on
-- average, and no key more than two pages beyond its ideal (its first and last
-- page shared with the neighbouring keys)
SELECT count(*) AS keys,
	   avg(pages::numeric / ideal) <= 1.5 AS avg_within_1_5,
	   sum(pages)::numeric / sum(ideal) <= 1.5 AS total_within_1_5,
	   max(pages - ideal) <= 2 AS at_most_2_extra
FROM key_pages('t_archive', 'cid');
-- and in cluster order within the table
SELECT count(*) AS out_of_order FROM (
	SELECT cid, ts, lag(cid) OVER w AS pcid, lag(ts) OVER w AS pts
	FROM t_archive WINDOW w AS (ORDER BY ctid)) s
WHERE (pcid, pts) > (cid, ts);

-- the run is recorded
SELECT relation, relation_name, rows_moved, batches, started_by, run_as, error,
	   finished_at >= started_at AS sane
FROM archive_cluster_runs ORDER BY run_id;
SELECT relation, runs, total_rows_moved, last_run_rows FROM archive_cluster_tables ORDER BY 1;

-- rows newer than the hot window stay; force moves what is eligible
INSERT INTO t SELECT now() - interval '2 hours', 300001, 1, 'old enough';
INSERT INTO t SELECT now(), 300002, 1, 'hot';
SELECT table_name, status, rows_moved FROM archive_cluster_run('t');
SELECT table_name, status, rows_moved FROM archive_cluster_run('t', force => true);
SELECT 'current' AS tier, id FROM t_current WHERE id > 300000
UNION ALL SELECT 'archive', id FROM t_archive WHERE id > 300000 ORDER BY id;

-- max_batches and max_batch_rows cut a run into batches
UPDATE archive_cluster_config SET hot_window = '0', batch_rows = 1000 WHERE relation = 't'::regclass;
SET archive_cluster.max_batch_rows = 1000;
INSERT INTO t SELECT now() - interval '1 day', 400000 + i, i % 10, 'b' FROM generate_series(1, 2500) i;
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('t', force => true, max_batches => 2);
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('t', force => true);
RESET archive_cluster.max_batch_rows;
UPDATE archive_cluster_config SET hot_window = '1 hour', batch_rows = NULL WHERE relation = 't'::regclass;
SELECT (SELECT count(*) FROM t) AS rows, (SELECT count(*) FROM t_current) AS current_rows;

-- a CHECK constraint added to the archive alone is enforced by runs: the
-- row stays in t_current, said in a WARNING (sql/run_refused.sql)
ALTER TABLE t_archive ADD CONSTRAINT archive_only CHECK (pad <> 'forbidden') NOT VALID;
INSERT INTO t SELECT now() - interval '1 day', 500001, 1, 'forbidden';
SELECT try($$SELECT * FROM archive_cluster_run('t', force => true)$$);
SELECT count(*) AS still_current FROM t_current WHERE id = 500001;
DELETE FROM t WHERE id = 500001;
ALTER TABLE t_archive DROP CONSTRAINT archive_only;

-- index entries of a run are sorted per index: partial, expression, unique and
-- multi-column btree indexes all get every entry; a hash index falls back to
-- row-by-row inserts
CREATE TABLE ix (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, name text NOT NULL, amount int NOT NULL);
CREATE INDEX ix_partial ON ix (amount) WHERE amount > 50;
CREATE INDEX ix_expr ON ix (lower(name));
-- unique, and includes the row identity's columns, so it holds across tiers
CREATE UNIQUE INDEX ix_unique ON ix (name, id);
CREATE INDEX ix_cid_ts ON ix (cid, ts);
INSERT INTO ix SELECT g, g % 13, now() - interval '1 day' + g * interval '1 s', 'Name' || g, g % 100
FROM generate_series(1, 5000) g;
SELECT archive_cluster_register('ix', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
SELECT rows_moved FROM archive_cluster_run('ix', force => true);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM ix_archive WHERE amount > 50) AS partial,
	   (SELECT count(*) FROM ix_archive WHERE lower(name) >= 'name') AS expr,
	   (SELECT count(*) FROM ix_archive WHERE name >= 'Name') AS uniq,
	   (SELECT count(*) FROM ix_archive WHERE cid >= 0) AS cid_ts,
	   (SELECT count(*) FROM ix_archive WHERE id > 0) AS pkey;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix_archive WHERE amount > 50;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS partial_expected FROM ix_archive WHERE amount > 50;
-- a duplicate planted in the archive: the unique index refuses that row
INSERT INTO ix_archive VALUES (900001, 1, now() - interval '1 day', 'Dup', 1);
INSERT INTO ix_current VALUES (900001, 1, now() - interval '1 day', 'Dup', 1);
SELECT try($$SELECT * FROM archive_cluster_run('ix', force => true)$$);
DELETE FROM ix_current WHERE id = 900001;
DELETE FROM ix WHERE id = 900001;
-- with a hash index, row by row
CREATE INDEX ix_hash ON ix_archive USING hash (name);
INSERT INTO ix SELECT g, g % 13, now() - interval '1 day', 'Hash' || g, 7 FROM generate_series(10001, 10100) g;
SELECT rows_moved FROM archive_cluster_run('ix', force => true);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS via_hash FROM ix_archive WHERE name = 'Hash10050';
RESET enable_seqscan;
RESET enable_bitmapscan;
-- archive_cluster.run_flush_after is the run's own backend_flush_after: the
-- session's setting is back afterwards; out of range is refused
SET backend_flush_after = 0;
SET archive_cluster.run_flush_after = '128kB';
INSERT INTO ix SELECT g, g % 13, now() - interval '1 day', 'Flush' || g, 7 FROM generate_series(20001, 20100) g;
SELECT rows_moved FROM archive_cluster_run('ix', force => true);
SHOW backend_flush_after;
SHOW archive_cluster.run_flush_after;
SELECT try($$SET archive_cluster.run_flush_after = '4MB'$$) LIKE '22023: % is outside the valid range for parameter "archive_cluster.run_flush_after" %' AS refused;
RESET archive_cluster.run_flush_after;
RESET backend_flush_after;
-- archive_cluster.run_max_wal_rate: MB/s of WAL of a run among other writers
-- (specs/run_pacing.spec shows it pacing a run); alone, a run never sleeps
SHOW archive_cluster.run_max_wal_rate;
SELECT try($$SET archive_cluster.run_max_wal_rate = -1$$) LIKE '22023: % is outside the valid range for parameter "archive_cluster.run_max_wal_rate" %' AS refused;
SELECT paced >= '0' AND paced <= duration AS paced_sane FROM archive_cluster_runs ORDER BY run_id DESC LIMIT 1;
-- archive_cluster.pacing: what sets that rate among writers; 'effect' by default
SHOW archive_cluster.pacing;
SELECT try($$SET archive_cluster.pacing = 'fast'$$) LIKE '22023: invalid value for parameter "archive_cluster.pacing": "fast"%' AS refused;
SHOW archive_cluster.max_commit_slowdown;
SELECT try($$SET archive_cluster.max_commit_slowdown = 0.9$$) LIKE '22023: % is outside the valid range for parameter "archive_cluster.max_commit_slowdown" %' AS refused;
SHOW archive_cluster.min_wal_rate;
SELECT try($$SET archive_cluster.min_wal_rate = 0$$) LIKE '22023: % is outside the valid range for parameter "archive_cluster.min_wal_rate" %' AS refused;
-- the run log's paced_replicas: none waited here
SELECT paced_replicas = '0' AS no_replica_wait FROM archive_cluster_runs ORDER BY run_id DESC LIMIT 1;
-- no job runs now: no progress row
SELECT count(*) AS jobs FROM archive_cluster_progress;
-- commits that wrote are timed (the library is preloaded): this session's own, at least
CREATE TABLE commit_timed (x int);
INSERT INTO commit_timed VALUES (1);
SELECT commits > 0 AS counted, p99_ms >= p90_ms AND p90_ms >= p50_ms AS ordered
FROM archive_cluster_commit_latency WHERE histogram = 'quiet';
DROP TABLE commit_timed;
