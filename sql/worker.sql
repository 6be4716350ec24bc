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
