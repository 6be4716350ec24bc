-- Hostile and bad input across the SQL surface that errors.sql and stats.sql
-- do not already cover: each asserts its SQLSTATE and message (try() comes
-- from setup.sql).  44 bad inputs, numbered.
CREATE TABLE h (id int PRIMARY KEY, k int NOT NULL, ts timestamptz NOT NULL,
				d date NOT NULL DEFAULT '2000-01-01', j json NOT NULL DEFAULT '{}', tx text NOT NULL DEFAULT 'x',
				n int NOT NULL DEFAULT 0 CHECK (n >= 0), gone int);
ALTER TABLE h DROP COLUMN gone;
INSERT INTO h (id, k, ts) SELECT g, g % 5, timestamptz '2000-01-01 00:00+00' + g * interval '1 minute'
FROM generate_series(1, 100) g;

-- settings
SELECT try($$SET archive_cluster.debug_pause = 'bogus'$$);                   -- 1
SELECT try($$SET archive_cluster.debug_pause = 'locked,,deleted'$$);         -- 2
SELECT try($$SET archive_cluster.max_batch_rows = 5$$);                      -- 3
SELECT try($$SET archive_cluster.max_batch_rows = 'many'$$);                 -- 4
SELECT try($$SET archive_cluster.naptime = 5$$);                             -- 5
SELECT try($$SET archive_cluster.enabled = off$$);                           -- 6
SELECT try($$SET archive_cluster.databases = 'a'$$);                         -- 7
SET ROLE ac_other;
SELECT try($$SET archive_cluster.debug_pause = 'locked'$$);                  -- 8
RESET ROLE;

-- registering: argument bounds, column types, kinds of relation
SELECT try($$SELECT archive_cluster_register('h', '{k}', 'ts', lock_timeout => '1 day')$$);   -- 9
SELECT try($$SELECT archive_cluster_register('h', '{k}', 'ts', lock_timeout => '0.5 ms')$$);  -- 10
SELECT try($$SELECT archive_cluster_register('h', '{k}', 'ts', lock_retries => 1001)$$);      -- 11
SELECT try($$SELECT archive_cluster_register('h', '{k}', 'ts', lock_retries => NULL)$$);      -- 12
SELECT try($$SELECT archive_cluster_register('h', '{k}', 'd')$$);             -- 13 date
SELECT try($$SELECT archive_cluster_register('h', '{k}', 'tx')$$);            -- 14 text
SELECT try($$SELECT archive_cluster_register('h', '{j}', 'ts')$$);            -- 15 json: no btree
SELECT try($$SELECT archive_cluster_register('h', '{k,j}', 'ts')$$);          -- 16 second column
SELECT try(format('SELECT archive_cluster_register(%L, %L, %L)', 'h',
	(SELECT '{"' || attname || '"}' FROM pg_attribute WHERE attrelid = 'h'::regclass AND attisdropped), 'ts'));  -- 17 dropped column
SELECT try($$SELECT archive_cluster_register('h', '{""}', 'ts')$$);           -- 18
SELECT try($$SELECT archive_cluster_register('h', '{k}', '')$$);              -- 19
SELECT try($$SELECT archive_cluster_register('h', '{k}', 'xmin')$$);          -- 20 system column
-- (an index and a composite type: the message is PostgreSQL's, and differs
-- between versions; the SQLSTATE does not)
SELECT left(try($$SELECT archive_cluster_register('h_pkey', '{k}', 'ts')$$), 5) AS sqlstate;  -- 21 an index
CREATE TYPE h_type AS (a int);
SELECT left(try($$SELECT archive_cluster_register('h_type', '{a}', 'ts')$$), 5) AS sqlstate;  -- 22 a composite type
SELECT regexp_replace(try(format('SELECT archive_cluster_register(%L, %L, %L)',
	(SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'h'::regclass), '{chunk_id}', 'chunk_seq')), 'pg_toast_[0-9]+', 'pg_toast_N') AS try;  -- 23 its TOAST table
SELECT try($$SELECT archive_cluster_register('archive_cluster_run_log', '{relation_name}', 'started_at')$$);  -- 24 the extension's own table
SELECT try($$SELECT archive_cluster_register('"H"', '{k}', 'ts')$$);         -- 25 no such table (case)

-- a registered table: runs, state, unregistering
SELECT archive_cluster_register('h', '{k,ts}', 'ts', batch_rows => 10);
SELECT rows_moved FROM archive_cluster_run('h', force => true);
SELECT try($$SELECT * FROM archive_cluster_run('h', max_batches => -1)$$);   -- 26
SELECT try($$SELECT * FROM archive_cluster_run('h_archive')$$);              -- 27
CREATE VIEW h_plain_view AS SELECT 1 AS x;
SELECT try($$SELECT * FROM archive_cluster_run('h_plain_view')$$);           -- 28
SELECT try($$SELECT * FROM archive_cluster_table_state('h_current')$$);      -- 29
SELECT try($$SELECT archive_cluster_unregister('h', lock_retries => 1001)$$);  -- 30
SELECT try($$SELECT archive_cluster_unregister('h', lock_timeout => NULL)$$);  -- 31
SELECT try($$SELECT archive_cluster_unregister('h', lock_retries => NULL)$$);  -- 32
SELECT try($$DROP TABLE h_archive$$);                                         -- 33 the view needs it
SELECT try($$SELECT archive_cluster_register('h_current', '{k}', 'ts')$$);    -- 34 a part of it

-- DML through the view
SELECT try($$INSERT INTO h (id, k, ts) VALUES (NULL, 1, now())$$);            -- 35 NULL key
SELECT try($$UPDATE h SET id = NULL WHERE id = 5$$);                          -- 36 key set to NULL (archived row)
SELECT try($$UPDATE h SET n = -1 WHERE id = 5$$);                             -- 37 CHECK of the archive
SELECT try($$INSERT INTO h (id, k, ts) VALUES (1000, 1, now()) ON CONFLICT (id) DO NOTHING$$);  -- 38
SELECT try($$TRUNCATE h$$);                                                   -- 39
SELECT try($$COPY h (id, k, ts) FROM PROGRAM 'printf "2000\t1\tnot a time\n"'$$);  -- 40 bad data
SELECT try($$SELECT archive_cluster_view_flush()$$);                          -- 41
CREATE TABLE h_misuse (id int);
CREATE TRIGGER misuse BEFORE INSERT ON h_misuse FOR EACH ROW EXECUTE FUNCTION archive_cluster_view_flush();
SELECT try($$INSERT INTO h_misuse VALUES (1)$$);                              -- 42
-- a column of h_current renamed: the view reads its tables' columns by
-- number, and so does its trigger, so the UPDATE still changes the column
-- the view shows (security_columns.sql swaps columns' names)
ALTER TABLE h_current RENAME COLUMN n TO n2;
SELECT try($$UPDATE h SET n = 1 WHERE id = 50$$);                             -- 43
SELECT n FROM h WHERE id = 50;
ALTER TABLE h_current RENAME COLUMN n2 TO n;
SELECT try($$UPDATE h SET n = 1 WHERE id = 50$$);

-- ON CONFLICT DO NOTHING without a target is accepted by PostgreSQL on a view
-- with INSTEAD OF triggers, but the trigger cannot honour it: a conflicting
-- row is an error, not skipped (docs/reliability.md)
SELECT try($$INSERT INTO h (id, k, ts) VALUES (50, 1, now()) ON CONFLICT DO NOTHING$$);  -- 44

-- no row lost or duplicated; only the UPDATE that succeeded changed one
SELECT count(*), count(DISTINCT id), sum(n) FROM h;
SELECT count(*) AS in_both FROM h_current JOIN h_archive USING (id);
SELECT archive_cluster_unregister('h') AS moved_back;
DROP TABLE h, h_misuse;
DROP VIEW h_plain_view;
DROP TYPE h_type;
