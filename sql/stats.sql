-- Fragmentation and buffer statistics.
-- 400,000 rows of 2,000 keys scattered row by row: each key's rows sit one per page.
CREATE TABLE scattered (id int PRIMARY KEY, k int NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL);
CREATE INDEX ON scattered (k, ts);
INSERT INTO scattered
SELECT g, g % 2000, now() - interval '2 days' + g * interval '100 ms', repeat('x', 20 + g % 50)
FROM generate_series(1, 400000) g;
ANALYZE scattered;

SELECT tier, table_name, index_name, table_rows, table_pages > 0 AS has_pages, keys_sampled, rows_sampled,
	   max_pages_per_key >= p95_pages_per_key AND p95_pages_per_key >= 1 AS ordered,
	   fragmentation_ratio >= 5 AS fragmented, rows_per_page_touched < 2 AS one_row_per_page
FROM archive_cluster_fragmentation('scattered', 'k');

-- the same seed gives the same sample; fewer keys on request
SELECT (SELECT array_agg(f::text) FROM archive_cluster_fragmentation('scattered', 'k', 50, 42) f)
	 = (SELECT array_agg(f::text) FROM archive_cluster_fragmentation('scattered', 'k', 50, 42) f) AS deterministic;
SELECT keys_sampled FROM archive_cluster_fragmentation('scattered', 'k', 50);
-- a key with few values: every one of them
CREATE TABLE few (id int PRIMARY KEY, k text NOT NULL);
CREATE INDEX ON few (k);
INSERT INTO few SELECT g, 'key' || (g % 7) FROM generate_series(1, 5000) g;
SELECT keys_sampled, rows_sampled FROM archive_cluster_fragmentation('few', 'k');

-- registered and archived: the archive tier is clustered
SELECT checksum('scattered') AS before \gset
SELECT archive_cluster_register('scattered', cluster_by => '{k,ts}', age_column => 'ts', hot_window => '1 hour');
SELECT rows_moved FROM archive_cluster_run('scattered', force => true);
VACUUM scattered_current;
SELECT checksum('scattered') = :'before' AS same_rows;
SELECT tier, table_name, index_name, keys_sampled > 100 AS many_keys, rows_sampled > 0 AS has_rows,
	   fragmentation_ratio <= 1.5 AS clustered, rows_per_page_touched > 40 AS full_pages
FROM archive_cluster_fragmentation('scattered');
SELECT relation, tier, table_name, fragmentation_ratio <= 1.5 AS clustered
FROM archive_cluster_fragmentation WHERE relation = 'scattered'::regclass;

-- buffers: each relation of the registered table, current, archive and their indexes
SELECT relation, tier, object, kind, buffers >= 0 AS counted, dirty_buffers <= buffers AS dirty_ok,
	   pct_of_shared_buffers BETWEEN 0 AND 100 AS pct_ok,
	   capacity_rows IS NOT NULL AS has_capacity
FROM archive_cluster_buffers WHERE relation = 'scattered'::regclass ORDER BY tier DESC, kind DESC, object::text;
SELECT sum(buffers) > 0 AS archive_cached FROM archive_cluster_buffers('scattered') WHERE tier = 'archive';

-- bad input
SELECT try($$SELECT * FROM archive_cluster_fragmentation('few')$$);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('few', 'nope')$$);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('few', 'id', 0)$$);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('few', 'id', 100001)$$);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('few', 'id', NULL)$$);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('few', 'id', 10, NULL)$$);
SELECT try($$SELECT * FROM archive_cluster_fragmentation(NULL, 'id')$$);
CREATE TABLE noindex (id int, k int);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('noindex', 'k')$$);
CREATE INDEX ON noindex USING hash (k);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('noindex', 'k')$$);
CREATE INDEX ON noindex (id, k);
SELECT try($$SELECT * FROM archive_cluster_fragmentation('noindex', 'k')$$);
CREATE SEQUENCE aseq;
SELECT try($$SELECT * FROM archive_cluster_fragmentation('aseq', 'k')$$);
CREATE VIEW aview AS SELECT * FROM few;
SELECT try($$SELECT * FROM archive_cluster_fragmentation('aview', 'k')$$);
SELECT try($$SELECT * FROM archive_cluster_buffers('few')$$);

-- privileges: not open to PUBLIC; pg_stat_scan_tables and pg_monitor
SET ROLE ac_other;
SELECT try($$SELECT * FROM archive_cluster_fragmentation('few', 'k')$$);
SELECT try($$SELECT * FROM archive_cluster_fragmentation$$);
SELECT try($$SELECT * FROM archive_cluster_buffers$$);
SELECT try($$SELECT * FROM archive_cluster_buffers('scattered')$$);
RESET ROLE;
GRANT pg_monitor TO ac_other;
SET ROLE ac_other;
SELECT try($$SELECT * FROM archive_cluster_fragmentation('few', 'k')$$);
SELECT try($$SELECT * FROM archive_cluster_buffers$$);
RESET ROLE;
REVOKE pg_monitor FROM ac_other;

-- archive_cluster_index_fill() (issue 38, 7): a fresh build fills the leaf
-- pages to the fillfactor; deleting every other row and vacuuming halves
-- it; a fillfactor of 50 gives about 0.5; errors; not open to PUBLIC
CREATE TABLE fillt (id int PRIMARY KEY, v int);
INSERT INTO fillt SELECT g, g FROM generate_series(1, 100000) g;
CREATE INDEX fillt_half ON fillt (v) WITH (fillfactor = 50);
SELECT round(archive_cluster_index_fill('fillt_pkey')::numeric, 1) AS fresh,
	   round(archive_cluster_index_fill('fillt_half')::numeric, 1) AS ff50;
DELETE FROM fillt WHERE id % 2 = 0;
VACUUM fillt;
SELECT round(archive_cluster_index_fill('fillt_pkey', 1000000)::numeric, 1) AS half_deleted;
SELECT try($$SELECT archive_cluster_index_fill('fillt')$$);
CREATE INDEX fillt_hash ON fillt USING hash (v);
SELECT try($$SELECT archive_cluster_index_fill('fillt_hash')$$);
SELECT try($$SELECT archive_cluster_index_fill('fillt_pkey', 0)$$);
-- an index that a failed build left invalid is not read
CREATE UNIQUE INDEX CONCURRENTLY fillt_dup ON fillt ((v % 2));
SELECT try($$SELECT archive_cluster_index_fill('fillt_dup')$$);
SET ROLE ac_other;
SELECT try($$SELECT archive_cluster_index_fill('fillt_pkey')$$);
RESET ROLE;
DROP TABLE fillt;
