-- A tier's columns swapped under the view (issue 19, item 2).  The view
-- selects the tiers' columns by number, so a table owner may swap the names
-- of two columns of <t>_current (ALTER TABLE ... RENAME COLUMN) and the view
-- still works; the view's trigger and the mover must then map columns by
-- number too (values land in the columns the view reads them from), or
-- refuse with a clear error (55000): never store a Datum of one type in a
-- column of another (a pointer stored as a bigint, an integer read as a
-- pointer: the server crashed).  Kept in its own file: on the code before
-- the fix the server crashes here, and the file's session with it.
\set VERBOSITY default
SELECT pg_postmaster_start_time() AS sec_start_time \gset

CREATE ROLE owner1;
CREATE SCHEMA tc AUTHORIZATION owner1;
SET ROLE owner1;
CREATE TABLE tc.t (id int PRIMARY KEY, cid int NOT NULL, ts timestamp NOT NULL, b bigint NOT NULL, n numeric NOT NULL);
INSERT INTO tc.t VALUES (1, 1, '2000-01-01', 10, 1.5), (2, 2, '2000-01-01', 20, 2.5);
SELECT archive_cluster_register('tc.t', '{cid,ts}', 'ts');

-- swap the names of b (bigint) and n (numeric) in t_current
ALTER TABLE tc.t_current RENAME COLUMN b TO b_tmp;
ALTER TABLE tc.t_current RENAME COLUMN n TO b;
ALTER TABLE tc.t_current RENAME COLUMN b_tmp TO n;
SELECT attnum, attname, atttypid::regtype FROM pg_attribute
WHERE attrelid = 'tc.t_current'::regclass AND attnum > 0 ORDER BY attnum;
-- the view reads by number: b is still the bigint
SELECT id, b, pg_typeof(b) AS b_type, n, pg_typeof(n) AS n_type FROM tc.t ORDER BY id;

-- INSERT and UPDATE through the view: the values read back are exactly the
-- ones written, in their own columns (or a clear refusal)
SELECT try($$INSERT INTO tc.t VALUES (3, 3, '2000-01-01', 42, 4.25)$$) AS insert_row;
SELECT try($$INSERT INTO tc.t VALUES (4, 4, '2000-01-01', 9007199254740993, 12345.678901234567890),
										(5, 5, '2100-01-01', -7, 0.5)$$) AS insert_rows;
SELECT try($$UPDATE tc.t SET b = b + 1, n = n * 2 WHERE id IN (1, 3)$$) AS update_rows;
SELECT id, b, n FROM tc.t ORDER BY id;
SELECT pg_postmaster_start_time() = :'sec_start_time' AS same_server;

-- a forced run with only t_current swapped: the archive gets the values in
-- the right columns (or the run refuses)
SELECT try($$SELECT archive_cluster_run('tc.t', force => true)$$) AS run_current_swapped;
SELECT id, b, n FROM tc.t ORDER BY id;
SELECT id, b, n FROM tc.t_archive ORDER BY id;

-- the same swap in t_archive: a forced run, then an UPDATE of an archived
-- row and of a current row through the view
ALTER TABLE tc.t_archive RENAME COLUMN b TO b_tmp;
ALTER TABLE tc.t_archive RENAME COLUMN n TO b;
ALTER TABLE tc.t_archive RENAME COLUMN b_tmp TO n;
SELECT try($$INSERT INTO tc.t VALUES (6, 6, '2000-01-01', 60, 6.5)$$) AS insert_row;
SELECT try($$SELECT archive_cluster_run('tc.t', force => true)$$) AS run_both_swapped;
SELECT try($$UPDATE tc.t SET b = b + 100, n = n + 0.125 WHERE id IN (1, 5, 6)$$) AS update_rows;
SELECT id, b, n FROM tc.t ORDER BY id;
SELECT 'current' AS tier, count(*) FROM tc.t_current UNION ALL SELECT 'archive', count(*) FROM tc.t_archive;
-- the server did not restart
SELECT pg_postmaster_start_time() = :'sec_start_time' AS same_server;

-- unregistering puts every row back into one table with its values
SELECT try($$SELECT archive_cluster_unregister('tc.t')$$) AS unregister;
SELECT id, b, n FROM tc.t ORDER BY id;

-- Further changes a table owner can make under the view (from the review
-- of the fix): none may crash the server or change a value.
CREATE TABLE tc.u (id int PRIMARY KEY, cid int NOT NULL, ts timestamp NOT NULL, v int NOT NULL);
INSERT INTO tc.u SELECT g, g % 3, '2000-01-01', g FROM generate_series(1, 6) g;
SELECT archive_cluster_register('tc.u', '{cid,ts}', 'ts');
-- a column added to both tables with other types, filled, then dropped from
-- both: current's rows keep bytes of an int where the archive has a text
ALTER TABLE tc.u_current ADD COLUMN y int DEFAULT 7;
ALTER TABLE tc.u_archive ADD COLUMN y text DEFAULT 'seven';
UPDATE tc.u_current SET y = id * 1000;
ALTER TABLE tc.u_current DROP COLUMN y;
ALTER TABLE tc.u_archive DROP COLUMN y;
-- a column added to both tables with different defaults: current's
-- existing rows have current's default, and keep it in the archive
ALTER TABLE tc.u_current ADD COLUMN note text NOT NULL DEFAULT 'from current';
ALTER TABLE tc.u_archive ADD COLUMN note text NOT NULL DEFAULT 'from archive';
SELECT try($$SELECT archive_cluster_run('tc.u', force => true)$$) AS run_after_drops;
SELECT id, v FROM tc.u ORDER BY id;
SELECT id, v, note FROM tc.u_archive ORDER BY id;
-- a view that reads one column of a table twice is refused (55000), for
-- runs and writes alike
INSERT INTO tc.u VALUES (7, 1, '2000-01-01', 70);
CREATE OR REPLACE VIEW tc.u AS
	SELECT id, id AS cid, ts, v FROM tc.u_current UNION ALL SELECT id, cid, ts, v FROM tc.u_archive;
SELECT try($$INSERT INTO tc.u VALUES (8, 1, '2000-01-01', 80)$$) AS insert_read_twice;
SELECT try($$SELECT archive_cluster_run('tc.u', force => true)$$) AS run_read_twice;
CREATE OR REPLACE VIEW tc.u AS
	SELECT id, cid, ts, v FROM tc.u_current UNION ALL SELECT id, cid, ts, v FROM tc.u_archive;
-- the age column's name given to a column of another type (the view's
-- columns renamed): runs refuse (42804) instead of comparing its values
-- as timestamps
ALTER VIEW tc.u RENAME COLUMN ts TO ts_was;
ALTER VIEW tc.u RENAME COLUMN v TO ts;
SELECT try($$SELECT archive_cluster_run('tc.u', force => true)$$) AS run_age_renamed;
ALTER VIEW tc.u RENAME COLUMN ts TO v;
ALTER VIEW tc.u RENAME COLUMN ts_was TO ts;
SELECT try($$SELECT archive_cluster_run('tc.u', force => true)$$) AS run_renamed_back;
SELECT count(*), sum(v) FROM tc.u;
SELECT pg_postmaster_start_time() = :'sec_start_time' AS same_server;
RESET ROLE;

DELETE FROM archive_cluster_run_log WHERE relation_name LIKE 'tc.%';
DROP OWNED BY owner1 CASCADE;
DROP ROLE owner1;
