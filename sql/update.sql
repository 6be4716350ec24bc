-- ALTER EXTENSION archive_cluster UPDATE from release 1.0 (the first one):
-- a database with a table registered in each mode, created at 1.0, is
-- updated to the default version; the tables keep every row and go on
-- working (DML, runs, compaction, unregister), and the extension's objects
-- are then exactly those of a fresh CREATE EXTENSION at the default
-- version (compared in a second database by a digest of their definitions).
-- 1.1 adds the run log's paced_replicas, the views archive_cluster_progress
-- and archive_cluster_commit_latency, and partitioned tables
-- (archive_cluster--1.0--1.1.sql).
\set from_version '1.0'
-- a digest of the extension's objects: names, function definitions,
-- view definitions, columns with types, defaults and NOT NULL, constraints
\set digest 'SELECT count(*) AS objects, md5(string_agg(d, E''\\n'' ORDER BY d)) AS digest FROM (SELECT pg_describe_object(classid, objid, 0) || '' '' || coalesce(CASE WHEN classid = ''pg_proc''::regclass THEN pg_get_functiondef(objid) WHEN classid = ''pg_class''::regclass THEN coalesce(pg_get_viewdef(objid), '''') || (SELECT coalesce(string_agg(attname || '':'' || format_type(atttypid, atttypmod) || '':'' || attnotnull || '':'' || coalesce(pg_get_expr(adbin, adrelid), ''''), '','' ORDER BY attnum), '''') FROM pg_attribute LEFT JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum WHERE attrelid = objid AND attnum > 0 AND NOT attisdropped) || (SELECT coalesce(string_agg(conname || '':'' || pg_get_constraintdef(oid), '','' ORDER BY conname), '''') FROM pg_constraint WHERE conrelid = objid) END, '''') FROM pg_depend WHERE refclassid = ''pg_extension''::regclass AND deptype = ''e'' AND refobjid = (SELECT oid FROM pg_extension WHERE extname = ''archive_cluster'')) s(d)'
CREATE DATABASE ac_update;
CREATE DATABASE ac_fresh;
\c ac_update
SET client_min_messages = warning;
CREATE EXTENSION archive_cluster VERSION :'from_version';
RESET client_min_messages;
SELECT extversion FROM pg_extension WHERE extname = 'archive_cluster';
CREATE TABLE uv (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL);
CREATE TABLE ut (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL);
SELECT archive_cluster_register('uv', '{cid,ts}', 'ts', hot_window => '1 hour');
SELECT archive_cluster_register('ut', '{cid,ts}', 'ts', hot_window => '1 hour', mode => 'table');
INSERT INTO uv SELECT g, g % 20, now() - interval '1 day', repeat('p', g % 50) FROM generate_series(1, 2000) g;
INSERT INTO ut SELECT * FROM uv;
SELECT table_name, status, rows_moved FROM archive_cluster_run(force => true) ORDER BY 1;
-- a partitioned table (1.1) is refused at 1.0, with what to do
CREATE TABLE up (id int NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL) PARTITION BY RANGE (ts);
CREATE TABLE up_old PARTITION OF up FOR VALUES FROM ('2000-01-01') TO ('2000-01-02');
CREATE INDEX ON up (cid, ts);
INSERT INTO up SELECT g, g % 7, '2000-01-01'::timestamptz + g * interval '1 s' FROM generate_series(1, 500) g;
SELECT archive_cluster_register('up', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned');
CREATE TEMP TABLE before_update AS
SELECT (SELECT count(*) FROM uv) AS uv_rows, (SELECT sum(hashtext(x::text)) FROM uv x) AS uv_sum,
	   (SELECT count(*) FROM ut) AS ut_rows, (SELECT sum(hashtext(x::text)) FROM ut x) AS ut_sum;

ALTER EXTENSION archive_cluster UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'archive_cluster') AS at_default
FROM pg_extension WHERE extname = 'archive_cluster';
:digest \gset updated_

-- every row, in the tier it was in
SELECT (SELECT count(*) FROM uv) = uv_rows AND (SELECT sum(hashtext(x::text)) FROM uv x) = uv_sum AS uv_same,
	   (SELECT count(*) FROM ut) = ut_rows AND (SELECT sum(hashtext(x::text)) FROM ut x) = ut_sum AS ut_same,
	   (SELECT count(*) FROM uv_archive) AS uv_archived, (SELECT count(*) FROM ut_archive) AS ut_archived
FROM before_update;
-- and working: DML on both tiers, a run, a compaction, the views, unregister
INSERT INTO uv SELECT g, g % 20, now() - interval '1 day', 'new' FROM generate_series(2001, 3000) g;
INSERT INTO ut SELECT g, g % 20, now() - interval '1 day', 'new' FROM generate_series(2001, 3000) g;
UPDATE uv SET pad = 'changed' WHERE id IN (1, 2500);
UPDATE ut SET pad = 'changed' WHERE id IN (1, 2500);
DELETE FROM uv WHERE id = 2;
DELETE FROM ut WHERE id = 2;
SELECT table_name, status, rows_moved FROM archive_cluster_run(force => true) ORDER BY 1;
SELECT table_name, status, rows_rewritten FROM archive_cluster_compact(force => true) ORDER BY 1;
-- 1.1's partitioned tables
SELECT archive_cluster_register('up', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned');
SELECT rows_rewritten, gave_way FROM archive_cluster_pass_leaf('up_old');
SELECT leaf, closed, passes FROM archive_cluster_partitions('up');
SELECT archive_cluster_unregister('up');
-- 1.1's run log column, on the rows from before the update (its default) and after
SELECT count(*) AS runs_logged, bool_and(paced_replicas = '0') AS none_waited FROM archive_cluster_runs;
SELECT count(*) AS jobs_running FROM archive_cluster_progress;
SELECT archive_cluster_alter('ut', hot_window => '2 hours');
SELECT relation, mode, runs, total_rows_moved, compactions FROM archive_cluster_tables ORDER BY 1;
SELECT archive_cluster_unregister('uv'), archive_cluster_unregister('ut');
SELECT (SELECT count(*) FROM uv) AS uv_rows, (SELECT count(*) FROM uv WHERE pad = 'changed') AS uv_changed,
	   (SELECT count(*) FROM ut) AS ut_rows, (SELECT count(*) FROM ut WHERE pad = 'changed') AS ut_changed;

-- the same objects as a fresh install of the default version
\c ac_fresh
SET client_min_messages = warning;
CREATE EXTENSION archive_cluster;
RESET client_min_messages;
:digest \gset fresh_
SELECT :updated_objects > 30 AS objects_found, :'updated_digest' = :'fresh_digest' AS same_as_fresh_install;
\c contrib_regression
DROP DATABASE ac_update;
DROP DATABASE ac_fresh;
