-- Constraints a registered table cannot keep across its two tiers, refused
-- at registration and before every run (constraints.c), and a cancel during
-- a run of every table (issue 15, items 2, 3 and 8).
SET client_min_messages = warning;
CREATE SCHEMA tc;
SET search_path = tc, public;

-- 8. a unique index other than the row identity holds within one tier only:
-- refused at registration, with the index named
CREATE TABLE u (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, email text NOT NULL);
CREATE UNIQUE INDEX u_email ON u (email);
SELECT try($$SELECT archive_cluster_register('tc.u', cluster_by => '{cid,ts}', age_column => 'ts')$$);
ALTER TABLE u ADD CONSTRAINT u_email_cid UNIQUE (email, cid);
DROP INDEX u_email;
SELECT try($$SELECT archive_cluster_register('tc.u', cluster_by => '{cid,ts}', age_column => 'ts')$$);
ALTER TABLE u DROP CONSTRAINT u_email_cid;
-- an exclusion constraint, likewise (on a range: no contrib module needed)
ALTER TABLE u ADD CONSTRAINT u_excl EXCLUDE USING gist (tstzrange(ts, ts, '[]') WITH &&);
SELECT try($$SELECT archive_cluster_register('tc.u', cluster_by => '{cid,ts}', age_column => 'ts')$$);
ALTER TABLE u DROP CONSTRAINT u_excl;
-- a unique index on the identity's column compared another way (here
-- another collation) is not implied by the identity: refused
CREATE TABLE k (code text PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
CREATE UNIQUE INDEX k_code_c ON k (code COLLATE "C");
SELECT try($$SELECT archive_cluster_register('tc.k', cluster_by => '{cid,ts}', age_column => 'ts')$$);
-- a unique index on a superset of the identity's columns is unique whenever
-- the identity is: accepted
CREATE UNIQUE INDEX u_email_id ON u (email, id);
SELECT archive_cluster_register('tc.u', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
INSERT INTO u SELECT g, g % 3, now() - interval '1 day', 'e' || g FROM generate_series(1, 30) g;
SELECT rows_moved FROM archive_cluster_run('tc.u', force => true);

-- a unique index added to either tier after registration: every run refuses,
-- says why, and records it; nothing is moved
INSERT INTO u SELECT g, g % 3, now() - interval '1 day', 'e' || g FROM generate_series(31, 40) g;
CREATE UNIQUE INDEX u_current_email ON u_current (email);
SELECT try($$SELECT * FROM archive_cluster_run('tc.u', force => true)$$);
SELECT table_name, status, rows_moved FROM archive_cluster_run(force => true) WHERE table_name = 'tc.u'::regclass;
SELECT rows_moved, error FROM archive_cluster_runs WHERE relation = 'tc.u'::regclass ORDER BY run_id DESC LIMIT 1;
DROP INDEX u_current_email;
CREATE UNIQUE INDEX u_archive_email ON u_archive (email);
SELECT try($$SELECT * FROM archive_cluster_run('tc.u', force => true)$$);
DROP INDEX u_archive_email;
SELECT (SELECT count(*) FROM u_current) AS current_rows, (SELECT count(*) FROM u_archive) AS archive_rows;
SELECT rows_moved FROM archive_cluster_run('tc.u', force => true);

-- 3. a foreign key that references <t>_current, added after registration: a
-- run would delete referenced rows without its triggers.  Refused, recorded,
-- nothing moved, no row left dangling.
CREATE TABLE p (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
SELECT archive_cluster_register('tc.p', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
INSERT INTO p SELECT g, g % 3, now() - interval '1 day' FROM generate_series(1, 20) g;
-- refused when created (an event trigger)...
SELECT try($$CREATE TABLE child (id int PRIMARY KEY, p_id int NOT NULL REFERENCES p_current (id))$$);
-- ... and by runs, for one created without event triggers
SET session_replication_role = replica;
CREATE TABLE child (id int PRIMARY KEY, p_id int NOT NULL REFERENCES p_current (id));
RESET session_replication_role;
INSERT INTO child SELECT g, g FROM generate_series(1, 20) g;
SELECT try($$SELECT * FROM archive_cluster_run('tc.p', force => true)$$);
SELECT table_name, status, rows_moved FROM archive_cluster_run(force => true) WHERE table_name = 'tc.p'::regclass;
SELECT rows_moved, error FROM archive_cluster_runs WHERE relation = 'tc.p'::regclass ORDER BY run_id DESC LIMIT 1;
SELECT count(*) AS dangling FROM child c WHERE NOT EXISTS (SELECT FROM p_current x WHERE x.id = c.p_id);
DROP TABLE child;
SELECT rows_moved FROM archive_cluster_run('tc.p', force => true);

-- 2. a cancel (here statement_timeout) during archive_cluster_run() of every
-- table ends the call, as it ends any statement: it is not one table's
-- failure to be reported and skipped.  The first table's run is stopped by
-- the timeout in its archive's CHECK constraint; the second table, run
-- after it, must not be archived by the cancelled call.
CREATE FUNCTION slow_ok(int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(30); RETURN true; END $$;
CREATE TABLE c1 (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
CREATE TABLE c2 (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
SELECT archive_cluster_register('tc.c1', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
SELECT archive_cluster_register('tc.c2', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
ALTER TABLE c1_archive ADD CONSTRAINT slow CHECK (slow_ok(id));
INSERT INTO c1 VALUES (1, 1, now() - interval '1 day');
INSERT INTO c2 VALUES (1, 1, now() - interval '1 day');
-- only these two tables are due
UPDATE u SET ts = now() WHERE true;
UPDATE p SET ts = now() WHERE true;
\set VERBOSITY terse
SET statement_timeout = '200ms';
SELECT table_name, status FROM archive_cluster_run(force => true) ORDER BY 1;
RESET statement_timeout;
\set VERBOSITY default
SELECT (SELECT count(*) FROM c1_archive) AS c1_archived, (SELECT count(*) FROM c2_archive) AS c2_archived;
ALTER TABLE c1_archive DROP CONSTRAINT slow;

RESET search_path;
DROP SCHEMA tc CASCADE;
RESET client_min_messages;
