-- Relations that do not exist (any OID is a valid regclass), and the
-- objects of a registered table dropped without unregistering it first
-- (DROP VIEW t; DROP TABLE t_current, t_archive).  Each function must say
-- which relation it means (never "(null)") with a clear SQLSTATE, and a
-- dropped registered table must not break the extension's views, runs of
-- every table, or registering the name again.  The checks print only what
-- any correct behaviour gives (a dropped table may be forgotten, or the
-- DROP refused).
CREATE FUNCTION clear_error(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text := try(sql);
BEGIN
	RETURN CASE WHEN r LIKE '%(null)%' THEN 'unclear: ' || r
				WHEN left(r, 5) IN ('42P01', '55000', '42809') THEN 'clear error'
				ELSE r END;
END $$;
SELECT clear_error($$SELECT * FROM archive_cluster_run(99999::oid::regclass)$$) = 'clear error' AS run_names_it;
SELECT clear_error($$SELECT archive_cluster_unregister(99999::oid::regclass)$$) = 'clear error' AS unregister_names_it;
SELECT clear_error($$SELECT * FROM archive_cluster_table_state(99999::oid::regclass)$$) = 'clear error' AS table_state_names_it;
SELECT clear_error($$SELECT * FROM archive_cluster_fragmentation(99999::oid::regclass, 'k')$$) = 'clear error' AS fragmentation_names_it;
SELECT clear_error($$SELECT * FROM archive_cluster_buffers(99999::oid::regclass)$$) = 'clear error' AS buffers_names_it;

-- dropped without unregistering
CREATE TABLE gone (id int PRIMARY KEY, k int NOT NULL, ts timestamptz NOT NULL);
INSERT INTO gone SELECT g, g % 3, now() - interval '1 day' FROM generate_series(1, 30) g;
SELECT archive_cluster_register('gone', '{k,ts}', 'ts', batch_rows => 10);
CREATE TABLE stays (id int PRIMARY KEY, k int NOT NULL, ts timestamptz NOT NULL);
INSERT INTO stays SELECT g, g % 3, now() - interval '1 day' FROM generate_series(1, 30) g;
SELECT archive_cluster_register('stays', '{k,ts}', 'ts', batch_rows => 10);
DO $$
BEGIN
	DROP VIEW gone;
	DROP TABLE gone_current, gone_archive;
EXCEPTION WHEN OTHERS THEN
	NULL;
END $$;
SELECT count(*) AS dangling FROM archive_cluster_config c
WHERE NOT EXISTS (SELECT FROM pg_class r WHERE r.oid = c.relation)
   OR NOT EXISTS (SELECT FROM pg_class r WHERE r.oid = c.current_table)
   OR NOT EXISTS (SELECT FROM pg_class r WHERE r.oid = c.archive_table);
SELECT try($$SELECT count(*) FROM archive_cluster_tables$$) = 'ok' AS tables_view_works;
SELECT try($$SELECT count(*) FROM archive_cluster_buffers$$) = 'ok' AS buffers_view_works;
WITH r AS (SELECT * FROM archive_cluster_run(force => true))
SELECT count(*) FILTER (WHERE status LIKE 'error%') AS failed,
	   count(*) FILTER (WHERE table_name::text = 'stays' AND status = 'archived') AS stays_archived
FROM r;
SELECT count(*) AS stays_rows_archived FROM stays_archive;
-- a column added to a tier alone and dropped again: still registered
ALTER TABLE stays_current ADD COLUMN extra int;
ALTER TABLE stays_current DROP COLUMN extra;
SELECT count(*) AS still_registered FROM archive_cluster_config WHERE relation = 'stays'::regclass;
SELECT archive_cluster_unregister('stays') AS moved_back;
DROP TABLE stays;
DROP FUNCTION clear_error(text);
-- clean up for the tests that follow, whatever happened above
DO $$
BEGIN
	IF to_regclass('gone_archive') IS NOT NULL THEN
		PERFORM archive_cluster_unregister('gone');
		DROP TABLE gone;
	END IF;
END $$;
WITH d AS (DELETE FROM archive_cluster_config c
		   WHERE NOT EXISTS (SELECT FROM pg_class r WHERE r.oid = c.relation) RETURNING 1)
SELECT count(*) >= 0 AS cleaned FROM d;
DELETE FROM archive_cluster_run_log WHERE relation_name IN ('public.gone', 'public.stays');
