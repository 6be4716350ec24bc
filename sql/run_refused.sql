-- Rows the archive refuses (issue 15): a run leaves them in <t>_current,
-- moves the others, says which table, constraint and key (a WARNING with
-- the SQLSTATE an INSERT would raise, and archive_cluster_runs), and the
-- next runs check rows one by one until none is refused.  Archiving never
-- stops for good because of one row.
SET client_min_messages = warning;
CREATE SCHEMA rr;
SET search_path = rr, public;

CREATE TABLE p (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, pad text);
SELECT archive_cluster_register('rr.p', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
INSERT INTO p SELECT g, g % 5, now() - interval '1 day', 'x' || g FROM generate_series(1, 100) g;

-- a CHECK constraint of the archive alone refuses the rows of customer 3
ALTER TABLE p_archive ADD CONSTRAINT no_three CHECK (cid <> 3);
SELECT status, rows_moved FROM archive_cluster_run('rr.p', force => true);
SELECT count(*) AS left_current, min(cid) AS cid_min, max(cid) AS cid_max FROM p_current;
SELECT count(*) AS archived FROM p_archive;
SELECT rows_moved, rows_refused, rows_busy, left_behind, error
FROM archive_cluster_runs WHERE relation = 'rr.p'::regclass ORDER BY run_id DESC LIMIT 1;
-- the SQLSTATE of the warning is that of the violation
\set VERBOSITY sqlstate
SELECT status, rows_moved FROM archive_cluster_run('rr.p', force => true);
\set VERBOSITY default

-- what the hint says to do: change the constraint (or correct the rows);
-- the next run moves them.  A NOT NULL of the archive alone refuses a row
-- of customer 1 instead; the message names the column
ALTER TABLE p_archive DROP CONSTRAINT no_three;
INSERT INTO p VALUES (101, 1, now() - interval '1 day', NULL);
ALTER TABLE p_archive ALTER COLUMN pad SET NOT NULL;
SELECT status, rows_moved FROM archive_cluster_run('rr.p', force => true);
SELECT rows_moved, rows_refused, left_behind FROM archive_cluster_runs
WHERE relation = 'rr.p'::regclass ORDER BY run_id DESC LIMIT 1;
-- corrected: moved, and nothing more to say
UPDATE p SET pad = 'filled' WHERE id = 101;
SELECT status, rows_moved FROM archive_cluster_run('rr.p', force => true);
SELECT count(*) AS left_current FROM p_current;
SELECT rows_moved, rows_refused, left_behind FROM archive_cluster_runs
WHERE relation = 'rr.p'::regclass ORDER BY run_id DESC LIMIT 1;

-- a row whose key is already archived (written into the tiers behind the
-- view's back): left in p_current, the others move; the key is named
INSERT INTO p_archive VALUES (500, 1, now() - interval '2 days', 'planted');
INSERT INTO p_current VALUES (500, 1, now() - interval '1 day', 'twin');
INSERT INTO p SELECT g, g % 5, now() - interval '1 day', 'y' || g FROM generate_series(201, 220) g;
SELECT status, rows_moved FROM archive_cluster_run('rr.p', force => true);
SELECT id, pad FROM p_current ORDER BY id;
SELECT rows_moved, rows_refused, left_behind FROM archive_cluster_runs
WHERE relation = 'rr.p'::regclass ORDER BY run_id DESC LIMIT 1;
-- runs of every table report it the same way, and go on
SELECT status, rows_moved FROM archive_cluster_run(force => true) WHERE table_name = 'rr.p'::regclass;
-- deleted: the next run, careful once more, finds nothing to refuse and
-- says so in the log; the one after goes at full speed again
DELETE FROM p_current WHERE id = 500;
SELECT status, rows_moved FROM archive_cluster_run('rr.p', force => true);
SELECT rows_moved, batches, rows_refused, left_behind FROM archive_cluster_runs
WHERE relation = 'rr.p'::regclass ORDER BY run_id DESC LIMIT 1;

-- a role that may not read the table sees counts, not keys
CREATE ROLE rr_other;
SET ROLE rr_other;
SELECT rows_refused, left_behind IS NULL AS key_hidden FROM archive_cluster_runs
WHERE relation_name = 'rr.p' AND rows_refused > 0 ORDER BY run_id DESC LIMIT 1;
RESET ROLE;
DROP ROLE rr_other;

-- row-level security (issue 38, 6): a role that reads the table through a
-- policy (cid = 1) sees no key nor error of the run history, as PostgreSQL
-- shows no key in its own errors then; without a policy applying, the keys
CREATE TABLE q (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
SELECT archive_cluster_register('rr.q', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', mode => 'table');
INSERT INTO q SELECT g, g % 3, now() - interval '1 day' FROM generate_series(1, 30) g;
ALTER TABLE q_archive ADD CONSTRAINT no_two CHECK (cid <> 2);
SELECT status, rows_moved FROM archive_cluster_run('rr.q', force => true);
CREATE ROLE rr_reader;
GRANT USAGE ON SCHEMA rr TO rr_reader;
GRANT SELECT ON q TO rr_reader;
SET ROLE rr_reader;
SELECT rows_refused, left_behind IS NULL AS key_hidden, error IS NULL AS error_hidden
FROM archive_cluster_runs WHERE relation_name = 'rr.q' ORDER BY run_id DESC LIMIT 1;
RESET ROLE;
ALTER TABLE q ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_one ON q FOR SELECT TO rr_reader USING (cid = 1);
SET ROLE rr_reader;
SELECT count(*) AS rows_seen, min(cid), max(cid) FROM q;
SELECT rows_refused, left_behind IS NULL AS key_hidden, error IS NULL AS error_hidden
FROM archive_cluster_runs WHERE relation_name = 'rr.q' ORDER BY run_id DESC LIMIT 1;
RESET ROLE;
-- a policy on the archive alone hides them too
ALTER TABLE q DISABLE ROW LEVEL SECURITY;
ALTER TABLE q_archive ENABLE ROW LEVEL SECURITY;
SET ROLE rr_reader;
SELECT left_behind IS NULL AS key_hidden FROM archive_cluster_runs
WHERE relation_name = 'rr.q' ORDER BY run_id DESC LIMIT 1;
RESET ROLE;
SELECT archive_cluster_unregister('rr.q');
DROP TABLE q;
REVOKE USAGE ON SCHEMA rr FROM rr_reader;
DROP ROLE rr_reader;

SELECT archive_cluster_unregister('rr.p');
DROP SCHEMA rr CASCADE;
