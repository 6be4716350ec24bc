-- The background worker: with the library preloaded (test/regress.conf),
-- it archives a due table with nobody calling anything.
-- It is off for the other tests; this one turns it on and off again.
SELECT count(*) AS launchers FROM pg_stat_activity WHERE backend_type = 'archive_cluster launcher';

-- owned by a role without superuser: the worker runs as that owner
SET ROLE ac_owner;
CREATE TABLE wk (id bigint PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, amount numeric);
CREATE INDEX ON wk (cid, ts);
INSERT INTO wk SELECT g, g % 500, now() - interval '3 hours' - g * interval '1 ms', g
FROM generate_series(1, 60000) g;
SELECT checksum('wk') AS before \gset
SELECT archive_cluster_register('wk', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 20000);
-- not due: fewer eligible rows than batch_rows in a second table
CREATE TABLE wk_small (id bigint PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
INSERT INTO wk_small SELECT g, g % 10, now() - interval '3 hours' FROM generate_series(1, 100) g;
SELECT archive_cluster_register('wk_small', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 20000);
-- a partitioned table: the worker clusters its closed partition in place
CREATE TABLE wkp (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text)
	PARTITION BY RANGE (ts);
CREATE TABLE wkp_old PARTITION OF wkp FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE wkp_now PARTITION OF wkp FOR VALUES FROM ('2020-01-02') TO (MAXVALUE);
CREATE INDEX ON wkp (cid, ts);
INSERT INTO wkp SELECT g, g % 30, '2020-01-01'::timestamptz + g * interval '5 s', repeat('w', 90)
FROM generate_series(1, 12000) g;
SELECT checksum('wkp') AS wkp_before \gset
SELECT archive_cluster_register('wkp', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', mode => 'partitioned');
RESET ROLE;

-- the worker decides from cumulative statistics: publish this session's now
SELECT pg_stat_force_next_flush();

ALTER SYSTEM SET archive_cluster.enabled = on;
SELECT pg_reload_conf();

-- wait (at most 60 s) for the worker's run
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN EXISTS (SELECT FROM archive_cluster_runs WHERE relation = 'wk'::regclass);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;

SELECT relation, rows_moved, batches, started_by, run_as, error
FROM archive_cluster_runs WHERE relation IN ('wk'::regclass, 'wk_small'::regclass);
-- and the closed partition (wait at most 60 s)
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN EXISTS (SELECT FROM archive_cluster_runs WHERE relation = 'wkp'::regclass);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT relation, kind, rows_moved, started_by, run_as, error, detail LIKE 'leaf public.wkp_old (first pass):%' AS leaf_named
FROM archive_cluster_runs WHERE relation = 'wkp'::regclass;
SELECT checksum('wkp') = :'wkp_before' AS wkp_same_rows,
	   (SELECT avg(pages) FROM (SELECT count(DISTINCT (ctid::text::point)[0]) AS pages
								FROM wkp_old GROUP BY cid) k) < 10 AS clustered;
SELECT (SELECT count(*) FROM wk_current) AS cur, (SELECT count(*) FROM wk_archive) AS arc,
	   checksum('wk') = :'before' AS same_rows;
-- the pool served this database: the extension is known to be here (the
-- worker says so once its pass over every table is done: wait for it)
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN EXISTS (SELECT FROM archive_cluster_databases
						  WHERE datname = current_database() AND extension = 'installed');
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
SELECT extension, worker_starts > 0 AS served, last_worker_start IS NOT NULL AS started
FROM archive_cluster_databases WHERE datname = current_database();
SHOW archive_cluster.max_workers;
-- the pool's views are for pg_monitor: a table owner sees no other database's work
SET ROLE ac_owner;
SELECT count(*) FROM archive_cluster_workers;
SELECT count(*) FROM archive_cluster_databases;
RESET ROLE;
SELECT count(*) AS small_current FROM wk_small_current;

ALTER SYSTEM RESET archive_cluster.enabled;
SELECT pg_reload_conf();
