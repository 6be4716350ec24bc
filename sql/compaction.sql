-- Compaction: the archive's loose pages rewritten in cluster order.
-- 1,000 customers; six runs of 20,000 rows each give every customer six
-- islands of about 20 rows in the archive.
CREATE TABLE cp (ts timestamp NOT NULL, id int PRIMARY KEY, cid int NOT NULL, pad varchar(200) NOT NULL);
CREATE INDEX ON cp (cid, ts);
SELECT archive_cluster_register('cp', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 20000);
CREATE PROCEDURE cp_grow(first int, n int) LANGUAGE sql AS $$
	INSERT INTO cp
	SELECT timestamp '2024-01-01' + i * interval '1 second', i, (i::bigint * 7919 % 1000)::int,
		   repeat('x', (i * 37) % 200)
	FROM generate_series(first, first + n - 1) i;
$$;
DO $$
BEGIN
	FOR b IN 0..5 LOOP
		CALL cp_grow(b * 20000 + 1, 20000);
		PERFORM archive_cluster_run('cp', force => true);
	END LOOP;
END $$;
ANALYZE cp_current, cp_archive;
CREATE TEMP TABLE cp_before AS SELECT checksum('cp') AS sum;

-- every page runs wrote rows on is loose: six batches (PostgreSQL 16 and later
-- may add empty pages ahead of the rows, which stay out)
SELECT loose_pages = (SELECT count(DISTINCT (ctid::text::point)[0]) FROM cp_archive) AS all_loose,
	   loose_batches, compactions
FROM archive_cluster_tables WHERE relation = 'cp'::regclass;
-- what compaction would act on: each key's rows on ~6 loose pages, ~4 more than they need
SELECT tier, loose_pages_per_key BETWEEN 5 AND 9 AS loose_pages,
	   compactable_pages_per_key BETWEEN 3 AND 7 AS compactable
FROM archive_cluster_fragmentation('cp');
SELECT round(avg(pages)) AS avg_pages_before, max(pages - ideal) AS max_over_ideal_before
FROM key_pages('cp_archive', 'cid');

-- not due while the measure (the share of a key's archive pages compaction
-- would save: here about 5 of 8) is under archive_cluster.compaction_threshold
SET archive_cluster.compaction_threshold = 0.9;
SELECT table_name, status, rows_rewritten FROM archive_cluster_compact('cp');
RESET archive_cluster.compaction_threshold;

-- due: every archived row rewritten, the same rows (all the caller's tables;
-- those of the other tests are not due)
SELECT table_name, status, rows_rewritten, bytes_rewritten > 0 AS bytes FROM archive_cluster_compact()
WHERE table_name = 'cp'::regclass;
SELECT checksum('cp') = (SELECT sum FROM cp_before) AS same_rows;
SELECT count(*) AS archive_rows FROM cp_archive;
SELECT count(*) AS in_both FROM cp_current c JOIN cp_archive a USING (id);
-- each customer's 120 rows: as many pages of its own as they fill, the rest
-- on loose pages shared with the neighbouring customers
SELECT round(avg(pages), 1) AS avg_pages_after, max(pages - ideal) AS max_over_ideal_after
FROM key_pages('cp_archive', 'cid');
CREATE TEMP TABLE cp_pages AS
SELECT (ctid::text::point)[0]::bigint AS page, count(DISTINCT cid) AS keys, min(cid) AS cid, count(*) AS n
FROM cp_archive GROUP BY 1;
-- the loose set holds every page shared by customers; the pages it leaves
-- out are one customer's, full: as many rows as its fullest page (a
-- customer's rows are all of one size here)
SELECT count(*) FILTER (WHERE keys > 1 AND NOT in_loose) AS shared_not_loose,
	   count(*) FILTER (WHERE NOT in_loose AND keys = 1) > 900 AS settled_pages,
	   min(n::numeric / (SELECT max(n) FROM cp_pages m WHERE m.cid = s.cid AND m.keys = 1))
		   FILTER (WHERE NOT in_loose) AS settled_fill
FROM (SELECT p.*, l.blocks @> p.page AS in_loose
	  FROM cp_pages p, archive_cluster_loose l WHERE l.relation = 'cp'::regclass) s;
SELECT loose_batches, compactions, total_rows_rewritten, last_compaction_at IS NOT NULL AS when
FROM archive_cluster_tables WHERE relation = 'cp'::regclass;
SELECT kind, rows_moved, bytes_written > 0 AS bytes, batches, started_by, run_as, error
FROM archive_cluster_runs WHERE relation = 'cp'::regclass ORDER BY run_id DESC LIMIT 2;

-- nothing left to gain: not due; forced, only the loose pages are rewritten
SELECT table_name, status FROM archive_cluster_compact('cp');
SELECT status, rows_rewritten < 80000 AS loose_rows_only FROM archive_cluster_compact('cp', force => true);
SELECT checksum('cp') = (SELECT sum FROM cp_before) AS same_rows;

-- pages emptied by a compaction, once vacuumed, are where the next run and
-- the next compaction write: the archive does not grow
VACUUM cp_archive;
CREATE TEMP TABLE cp_size AS SELECT pg_relation_size('cp_archive') AS bytes;
CALL cp_grow(120001, 20000);
SELECT status FROM archive_cluster_run('cp', force => true);
SELECT pg_relation_size('cp_archive') = (SELECT bytes FROM cp_size) AS run_no_new_pages;
SELECT status FROM archive_cluster_compact('cp', force => true);
SELECT pg_relation_size('cp_archive') = (SELECT bytes FROM cp_size) AS no_new_pages;
SELECT count(*) AS rows FROM cp;

-- rows the archive stores smaller than the current tier does (compressed
-- there; the current tier keeps them inline up to toast_tuple_target 8160)
-- still fill its pages: a run writes onto a page again while it has room
CREATE TABLE tt (ts timestamp NOT NULL, id int PRIMARY KEY, cid int NOT NULL, pad text NOT NULL)
	WITH (toast_tuple_target = 8160);
SELECT archive_cluster_register('tt', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
INSERT INTO tt SELECT timestamp '2024-01-01' + i * interval '1 second', i, i % 100, repeat('abc', 1000)
FROM generate_series(1, 2000) i;
SELECT pg_relation_size('tt_current') / 8192 >= 1000 AS current_two_rows_a_page;
SELECT status FROM archive_cluster_run('tt', force => true);
SELECT count(*) AS rows, pg_relation_size('tt_archive') / 8192 < 100 AS archive_pages_filled FROM tt_archive;
SELECT archive_cluster_unregister('tt');
DROP TABLE tt;

-- keys of less than a page each (2,000 customers, 16 rows each in four runs):
-- compacted once, then not due, though each customer's rows still lie on one
-- or two pages shared with its neighbours
CREATE TABLE sk (ts timestamp NOT NULL, id int PRIMARY KEY, cid int NOT NULL, pad text NOT NULL);
CREATE INDEX ON sk (cid, ts);
SELECT archive_cluster_register('sk', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 8000);
DO $$
BEGIN
	FOR b IN 0..3 LOOP
		INSERT INTO sk
		SELECT timestamp '2024-01-01' + i * interval '1 second', i, (i::bigint * 7919 % 2000)::int,
			   repeat('z', (i * 37) % 200)
		FROM generate_series(b * 8000 + 1, b * 8000 + 8000) i;
		PERFORM archive_cluster_run('sk', force => true);
	END LOOP;
END $$;
SELECT status FROM archive_cluster_compact('sk');
SELECT status FROM archive_cluster_compact('sk');
SELECT compactable_pages_per_key < 0.1 AS compacted FROM archive_cluster_fragmentation('sk')
WHERE tier = 'archive';
SELECT archive_cluster_unregister('sk');
DROP TABLE sk;

-- the index scans a report makes: one per customer, over fewer pages
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM cp WHERE cid = 7;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- refused: NULL force, a table not registered, another role's table
SELECT try('SELECT archive_cluster_compact(''cp'', NULL)');
CREATE TABLE cp_plain (id int PRIMARY KEY);
SELECT try('SELECT archive_cluster_compact(''cp_plain'')');
SELECT try('SELECT archive_cluster_compact(''cp_current'')');
SET ROLE ac_other;
SELECT try('SELECT archive_cluster_compact(''cp'')');
-- without a relation: the caller's own tables only (not cp)
SELECT count(*) FROM archive_cluster_compact() WHERE table_name = 'cp'::regclass;
-- the loose set is not open to other roles
SELECT try('SELECT * FROM archive_cluster_loose');
RESET ROLE;

-- table mode: the same, and the unique index holds across the tiers after it
CREATE TABLE "Cp Tab" (ts timestamp NOT NULL, id int PRIMARY KEY, cid int NOT NULL, pad text NOT NULL);
CREATE INDEX ON "Cp Tab" (cid, ts);
SELECT archive_cluster_register('"Cp Tab"', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', mode => 'table', batch_rows => 5000);
DO $$
BEGIN
	FOR b IN 0..3 LOOP
		INSERT INTO "Cp Tab"
		SELECT timestamp '2024-01-01' + i * interval '1 second', i, i % 100, repeat('y', i % 150)
		FROM generate_series(b * 5000 + 1, b * 5000 + 5000) i;
		PERFORM archive_cluster_run('"Cp Tab"', force => true);
	END LOOP;
END $$;
CREATE TEMP TABLE tab_before AS SELECT checksum('"Cp Tab"') AS sum;
SELECT table_name, status, rows_rewritten FROM archive_cluster_compact('"Cp Tab"', force => true);
SELECT checksum('"Cp Tab"') = (SELECT sum FROM tab_before) AS same_rows;
SELECT (SELECT count(*) FROM ONLY "Cp Tab") AS current_rows, (SELECT count(*) FROM "Cp Tab_archive") AS archive_rows;
SELECT try('INSERT INTO "Cp Tab" VALUES (now(), 42, 1, ''dup'')');
SELECT round(avg(pages), 1) AS avg_pages, max(pages - ideal) AS max_over_ideal
FROM key_pages('"Cp Tab_archive"', 'cid');

-- unregistering forgets the loose set
SELECT archive_cluster_unregister('"Cp Tab"');
SELECT count(*) AS loose_rows FROM archive_cluster_loose WHERE relation::text = '"Cp Tab"';
SELECT checksum('"Cp Tab"') = (SELECT sum FROM tab_before) AS same_rows;
DROP TABLE "Cp Tab";

-- the sort holds the cluster columns and TIDs, not the rows: 4 MB of rows
-- compacted with maintenance_work_mem at 1 MB write no temporary file; the
-- rows read again by TID keep their TOASTed values (doc: 3.2 kB of md5s)
CREATE TABLE cpw (ts timestamp NOT NULL, id int PRIMARY KEY, cid int NOT NULL, pad text NOT NULL, doc text);
SELECT archive_cluster_register('cpw', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 1000);
DO $$
BEGIN
	FOR b IN 0..3 LOOP
		INSERT INTO cpw
		SELECT timestamp '2024-01-01' + i * interval '1 second', i, i % 10, repeat('w', 1000),
			   CASE WHEN i % 100 = 0 THEN
				   (SELECT string_agg(md5(i::text || g::text), '') FROM generate_series(1, 100) g) END
		FROM generate_series(b * 1000 + 1, b * 1000 + 1000) i;
		PERFORM archive_cluster_run('cpw', force => true);
	END LOOP;
END $$;
CREATE TEMP TABLE cpw_before AS SELECT checksum('cpw') AS sum;
SELECT pg_stat_force_next_flush();
CREATE TEMP TABLE temp_before AS
SELECT temp_files FROM pg_stat_database WHERE datname = current_database();
SET maintenance_work_mem = '1MB';
SELECT status, rows_rewritten FROM archive_cluster_compact('cpw', force => true);
RESET maintenance_work_mem;
SELECT pg_stat_force_next_flush();
SELECT d.temp_files - b.temp_files AS temp_files_written
FROM pg_stat_database d, temp_before b WHERE d.datname = current_database();
SELECT checksum('cpw') = (SELECT sum FROM cpw_before) AS same_rows;
SELECT count(*) AS docs, sum(length(doc)) AS doc_bytes,
	   bool_and(doc = (SELECT string_agg(md5(id::text || g::text), '') FROM generate_series(1, 100) g)) AS docs_intact
FROM cpw_archive WHERE doc IS NOT NULL;
SELECT pg_relation_size(reltoastrelid) > 0 AS toasted FROM pg_class WHERE relname = 'cpw_archive';
SELECT round(avg(pages), 1) AS avg_pages, max(pages - ideal) AS max_over_ideal
FROM key_pages('cpw_archive', 'cid');
SELECT archive_cluster_unregister('cpw');
DROP TABLE cpw;

-- the entries of an index on the cluster key go in as the rows do, in its
-- order (a unique one is checked against the rows the compaction deleted),
-- and the other indexes' sorts share maintenance_work_mem: 20,800 small rows
-- at 2 MB write no temporary file (two when each index had half), and every
-- row of the archive is found through each index
CREATE TABLE cpi (ts timestamp NOT NULL, id int PRIMARY KEY, cid int NOT NULL, pad text NOT NULL);
CREATE UNIQUE INDEX cpi_cid_ts ON cpi (cid, ts, id);
SELECT archive_cluster_register('cpi', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 5200);
DO $$
BEGIN
	FOR b IN 0..3 LOOP
		INSERT INTO cpi
		SELECT timestamp '2024-01-01' + i * interval '1 second', i, i % 10, repeat('i', 20)
		FROM generate_series(b * 5200 + 1, b * 5200 + 5200) i;
		PERFORM archive_cluster_run('cpi', force => true);
	END LOOP;
END $$;
SELECT pg_stat_force_next_flush();
UPDATE temp_before SET temp_files = (SELECT temp_files FROM pg_stat_database WHERE datname = current_database());
SET maintenance_work_mem = '2MB';
SELECT status, rows_rewritten FROM archive_cluster_compact('cpi', force => true);
RESET maintenance_work_mem;
SELECT pg_stat_force_next_flush();
SELECT d.temp_files - b.temp_files AS temp_files_written
FROM pg_stat_database d, temp_before b WHERE d.datname = current_database();
SELECT count(*) AS archive_rows FROM cpi_archive;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM cpi_archive WHERE cid >= 0;
SELECT count(*) AS by_cid_ts FROM cpi_archive WHERE cid >= 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM cpi_archive WHERE id > 0;
SELECT count(*) AS by_id FROM cpi_archive WHERE id > 0;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT archive_cluster_unregister('cpi');
DROP TABLE cpi;

SELECT archive_cluster_unregister('cp');
DROP TABLE cp, cp_plain;
DROP PROCEDURE cp_grow;
