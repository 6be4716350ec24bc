-- archive_cluster_alter(): a registered table's settings changed without
-- unregistering it, in both modes; checked as at registration, by the
-- owner only, recorded in the run history; later runs follow them.
SET ROLE ac_owner;
CREATE TABLE al_v (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, note text);
CREATE TABLE al_t (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, note text);
SELECT archive_cluster_register('al_v', '{cid,ts}', 'ts', hot_window => '1 hour');
SELECT archive_cluster_register('al_t', '{cid,ts}', 'ts', hot_window => '1 hour', mode => 'table');
-- 300 rows 90 minutes old, 300 rows 3 hours old
INSERT INTO al_v SELECT g, g % 7, now() - CASE WHEN g <= 300 THEN interval '90 minutes' ELSE interval '3 hours' END
FROM generate_series(1, 600) g;
INSERT INTO al_t SELECT * FROM al_v;

-- a wider hot window: the 90-minute-old rows stay where they are
SELECT archive_cluster_alter('al_v', hot_window => '2 hours');
SELECT archive_cluster_alter('al_t', hot_window => '2 hours');
SELECT relation, hot_window, batch_rows, lock_timeout, cluster_by FROM archive_cluster_tables
WHERE relation IN ('al_v'::regclass, 'al_t'::regclass) ORDER BY 1;
SELECT table_name, status, rows_moved FROM archive_cluster_run('al_v', force => true);
SELECT table_name, status, rows_moved FROM archive_cluster_run('al_t', force => true);
SELECT (SELECT count(*) FROM al_v_archive) AS v_archived, (SELECT count(*) FROM al_t_archive) AS t_archived,
	   (SELECT max(ts) < now() - interval '2 hours' FROM al_t_archive) AS only_older_than_2h;

-- a threshold of 1,000 rows (batch_rows): the 300 eligible rows wait for a
-- run that is not forced; at 100 they are archived, ordered by a new
-- cluster key (id, against the cid order of registration)
SELECT archive_cluster_alter('al_v', hot_window => '1 hour', batch_rows => 1000, cluster_by => '{id}');
SELECT archive_cluster_alter('al_t', hot_window => '1 hour', batch_rows => 1000, cluster_by => '{id}');
SELECT table_name, status, rows_moved FROM archive_cluster_run('al_v');
SELECT table_name, status, rows_moved FROM archive_cluster_run('al_t');
SELECT archive_cluster_alter('al_v', batch_rows => 100);
SELECT archive_cluster_alter('al_t', batch_rows => 100);
SELECT table_name, status, rows_moved FROM archive_cluster_run('al_v');
SELECT table_name, status, rows_moved FROM archive_cluster_run('al_t');
-- the batch just written is in id order, not in cid order
SELECT count(*) AS batch_rows, bool_and(id_order_kept) AS by_id
FROM (SELECT id > lag(id, 1, 0) OVER (ORDER BY ctid) AS id_order_kept
	  FROM al_v_archive WHERE ts > now() - interval '2 hours') s;
SELECT count(*) AS batch_rows, bool_and(id_order_kept) AS by_id
FROM (SELECT id > lag(id, 1, 0) OVER (ORDER BY ctid) AS id_order_kept
	  FROM al_t_archive WHERE ts > now() - interval '2 hours') s;
-- the rows archived before keep their place: still in (cid, ts) order
SELECT count(*) AS out_of_cid_order FROM (
	SELECT cid, ts, lag(cid) OVER w AS pcid, lag(ts) OVER w AS pts
	FROM al_v_archive WHERE ts < now() - interval '2 hours' WINDOW w AS (ORDER BY ctid)) s
WHERE (pcid, pts) > (cid, ts);
-- back to the automatic threshold; the own lock timeout of its runs
SELECT archive_cluster_alter('al_v', batch_rows => 0, lock_timeout => '250 ms');
SELECT archive_cluster_alter('al_v', lock_timeout => '0');
SELECT batch_rows, lock_timeout, threshold_source FROM archive_cluster_tables WHERE relation = 'al_v'::regclass;
-- nothing to change: nothing recorded
SELECT archive_cluster_alter('al_v', hot_window => '1 hour') AS unchanged;
SELECT archive_cluster_alter('al_v') AS unchanged;

-- every change in the run history, as the owner made it
SELECT relation, kind, started_by, run_as, rows_moved, detail FROM archive_cluster_runs
WHERE relation IN ('al_v'::regclass, 'al_t'::regclass) AND kind = 'alter' ORDER BY run_id;
-- and every row still there exactly once
SELECT count(*), count(DISTINCT id) FROM al_v;
SELECT count(*), count(DISTINCT id) FROM al_t;

-- refused as at registration, nothing changed
SELECT try($$SELECT archive_cluster_alter('al_v', hot_window => '-1 hour')$$);
SELECT try($$SELECT archive_cluster_alter('al_v', batch_rows => -5)$$);
SELECT try($$SELECT archive_cluster_alter('al_v', lock_timeout => '2 days')$$);
SELECT try($$SELECT archive_cluster_alter('al_v', cluster_by => '{note}')$$);
SELECT try($$SELECT archive_cluster_alter('al_v', cluster_by => '{nope}')$$);
SELECT try($$SELECT archive_cluster_alter('al_v', cluster_by => '{cid,cid}')$$);
SELECT try($$SELECT archive_cluster_alter('al_v', cluster_by => '{}')$$);
-- a column of <t>_current that the view does not read (added after
-- registration) is no column of the table: runs could not find it
ALTER TABLE al_v_current ADD COLUMN extra int NOT NULL DEFAULT 0;
SELECT try($$SELECT archive_cluster_alter('al_v', cluster_by => '{extra}')$$);
ALTER TABLE al_v_current DROP COLUMN extra;
SELECT try($$SELECT archive_cluster_alter('al_v_current', hot_window => '3 hours')$$);
SELECT try($$SELECT archive_cluster_alter(NULL, hot_window => '3 hours')$$);
CREATE TABLE al_plain (id int PRIMARY KEY);
SELECT try($$SELECT archive_cluster_alter('al_plain', hot_window => '3 hours')$$);
RESET ROLE;
-- another role: not its table
SET ROLE ac_other;
SELECT try($$SELECT archive_cluster_alter('al_v', hot_window => '3 hours')$$);
SELECT try($$SELECT archive_cluster_alter('al_t', batch_rows => 1)$$);
RESET ROLE;
SELECT relation, hot_window, batch_rows, lock_timeout, cluster_by FROM archive_cluster_tables
WHERE relation IN ('al_v'::regclass, 'al_t'::regclass) ORDER BY 1;

SELECT archive_cluster_unregister('al_v');
SELECT archive_cluster_unregister('al_t');
DROP TABLE al_v, al_t, al_plain;
