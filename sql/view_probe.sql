-- View mode: a SELECT, UPDATE or DELETE through the view by its row
-- identity is planned over <t>_current alone, and its custom scan
-- ArchiveClusterProbe looks the key up in <t>_archive only when <t>_current
-- has no row (plan/probe_view.c).
CREATE SCHEMA vp;
GRANT USAGE, CREATE ON SCHEMA vp TO ac_owner;
SET ROLE ac_owner;
CREATE TABLE vp.t (
	id int PRIMARY KEY,
	ts timestamp NOT NULL,
	cid int NOT NULL,
	note text
);
INSERT INTO vp.t (id, ts, cid, note)
SELECT i, timestamp '2020-01-01' + i * interval '1 minute', i % 10, 'n' || i
FROM generate_series(1, 100) i;
SELECT archive_cluster_register('vp.t', '{cid,ts}', 'ts', '1 day');
SELECT rows_moved FROM archive_cluster_run('vp.t', force => true);
-- ids 1-100 archived, 1001-1005 current
INSERT INTO vp.t (id, ts, cid, note)
SELECT i, timestamp '2030-01-01' + i * interval '1 minute', i % 10, 'n' || i
FROM generate_series(1001, 1005) i;
ANALYZE vp.t_current, vp.t_archive;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- SELECT: a current row (no probe), an archived one (probed), neither, NULL
SELECT analyzed($$SELECT * FROM vp.t WHERE id = 1003$$);
SELECT analyzed($$SELECT * FROM vp.t WHERE id = 7$$);
SELECT * FROM vp.t WHERE id = 7;
SELECT t FROM vp.t WHERE 1003 = id;
SELECT count(*) FROM vp.t WHERE id = 99999;
SELECT count(*) FROM vp.t WHERE id = NULL::int;
SELECT id FROM vp.t WHERE id = 7 AND note = 'other';
SELECT id, note FROM vp.t WHERE id = 7::bigint;
SELECT id, note FROM vp.t WHERE id = (SELECT max(id) FROM vp.t) - 1;

-- UPDATE and DELETE: the trigger gets the row from either tier
SELECT plan_of($$UPDATE vp.t SET note = 'x' WHERE id = 8$$);
UPDATE vp.t SET note = 'u8' WHERE id = 8 RETURNING id, note;
UPDATE vp.t SET note = 'u1002' WHERE id = 1002 RETURNING id, note;
UPDATE vp.t SET note = 'none' WHERE id = 99999;
SELECT id, note FROM vp.t_archive WHERE id = 8;
SELECT id, note FROM vp.t_current WHERE id = 1002;
SELECT plan_of($$DELETE FROM vp.t WHERE id = 9$$);
DELETE FROM vp.t WHERE id = 9 RETURNING id;
DELETE FROM vp.t WHERE id = 1001 RETURNING id;
SELECT count(*) FROM vp.t WHERE id IN (9, 1001);
-- one statement updating a current row, then an archived one (a prepared
-- statement: a new command), then the current row again: applied each time;
-- changed by the statement between its read and its write: 40001
WITH a AS (UPDATE vp.t SET note = note WHERE id = 1003 RETURNING id),
	 b AS (UPDATE vp.t SET note = note WHERE id = 10 RETURNING id),
	 c AS (UPDATE vp.t SET note = note WHERE id = 1003 RETURNING id)
SELECT (SELECT count(*) FROM a) AS a, (SELECT count(*) FROM b) AS b, (SELECT count(*) FROM c) AS c;
SELECT try($$WITH a AS (UPDATE vp.t SET note = 'y' WHERE id = 1004 RETURNING id),
	 b AS (UPDATE vp.t SET note = note WHERE id = 10 RETURNING id),
	 c AS (UPDATE vp.t SET note = 'z' WHERE id = 1004 RETURNING id)
SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b), (SELECT count(*) FROM c)$$);
SELECT id, note FROM vp.t WHERE id IN (1003, 1004, 10) ORDER BY id;

-- a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE up(int, text) AS UPDATE vp.t SET note = $2 WHERE id = $1;
EXECUTE up(10, 'g10');
EXECUTE up(1003, 'g1003');
SELECT analyzed($$EXECUTE up(11, 'g11')$$);
PREPARE sel(int) AS SELECT id, note FROM vp.t WHERE id = $1;
EXECUTE sel(10);
EXECUTE sel(1003);
RESET plan_cache_mode;
-- a cursor's plan reads both tiers: WHERE CURRENT OF finds its row in either
-- (PostgreSQL 18 refuses WHERE CURRENT OF on a view: 0A000; never 0 rows)
SELECT plan_of($$DECLARE c CURSOR FOR SELECT * FROM vp.t WHERE id = 1005$$);
CREATE FUNCTION pg_temp.current_of(k int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	c CURSOR FOR SELECT * FROM vp.t WHERE id = k;
	r record;
	n int;
BEGIN
	OPEN c;
	FETCH c INTO r;
	BEGIN
		UPDATE vp.t SET note = 'cur' || k WHERE CURRENT OF c;
		GET DIAGNOSTICS n = ROW_COUNT;
	EXCEPTION WHEN feature_not_supported THEN
		RETURN CASE WHEN current_setting('server_version_num')::int >= 180000
					THEN 'updated, or refused by this version' ELSE 'refused' END;
	END;
	CLOSE c;
	RETURN CASE WHEN n = 1 AND (SELECT note FROM vp.t WHERE id = k) = 'cur' || k
				THEN 'updated, or refused by this version' ELSE 'rows: ' || n END;
END
$$;
BEGIN;
SELECT pg_temp.current_of(1005) AS current_row, pg_temp.current_of(12) AS archived_row;
ROLLBACK;

-- not pruned: both tiers as before
SELECT plan_of($$SELECT id FROM vp.t WHERE id IN (5, 1003)$$);
SELECT plan_of($$SELECT id FROM vp.t WHERE cid = 5$$);
SELECT plan_of($$SELECT id FROM vp.t WHERE id = (random() * 0)::int + 5$$);
SELECT plan_of($$SELECT t.id FROM vp.t, (VALUES (5)) v(k) WHERE t.id = 5$$);
SELECT plan_of($$UPDATE vp.t SET note = 'x' WHERE cid = 5$$);
SET archive_cluster.tier_lookup = off;
SELECT plan_of($$SELECT id FROM vp.t WHERE id = 5$$);
RESET archive_cluster.tier_lookup;

-- the same two tables in a query of one's own: pruned if paired as the view
-- pairs them, not otherwise
SELECT plan_of($$SELECT * FROM (SELECT id, note FROM vp.t_current UNION ALL SELECT id, note FROM vp.t_archive) u WHERE id = 12$$);
SELECT * FROM (SELECT id, note FROM vp.t_current UNION ALL SELECT id, note FROM vp.t_archive) u WHERE id = 12;
SELECT plan_of($$SELECT * FROM (SELECT id, cid FROM vp.t_current UNION ALL SELECT cid, id FROM vp.t_archive) u WHERE id = 2$$);
SELECT * FROM (SELECT id, cid FROM vp.t_current UNION ALL SELECT cid, id FROM vp.t_archive) u WHERE id = 2 ORDER BY cid;

-- under SERIALIZABLE the archive is probed for every key
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT analyzed($$SELECT id FROM vp.t WHERE id = 1003$$);
COMMIT;

-- a column renamed in one tier only (a change in progress): both tiers
ALTER TABLE vp.t_current RENAME COLUMN note TO note2;
SELECT plan_of($$SELECT * FROM vp.t WHERE id = 13$$);
SELECT * FROM vp.t WHERE id = 13;
ALTER TABLE vp.t_current RENAME COLUMN note2 TO note;
SELECT plan_of($$SELECT * FROM vp.t WHERE id = 13$$);

-- a dropped column in <t>_current: SELECT pruned, UPDATE and DELETE not
-- (their row marks read the row's ctid)
ALTER TABLE vp.t_current ADD COLUMN extra int;
ALTER TABLE vp.t_archive ADD COLUMN extra int;
ALTER TABLE vp.t_current DROP COLUMN extra;
ALTER TABLE vp.t_archive DROP COLUMN extra;
SELECT plan_of($$SELECT * FROM vp.t WHERE id = 14$$);
SELECT * FROM vp.t WHERE id = 14;
SELECT plan_of($$UPDATE vp.t SET note = 'x' WHERE id = 14$$);
UPDATE vp.t SET note = 'd14' WHERE id = 14 RETURNING id, note;

-- permissions stay those of the plan over both tables: a role without
-- SELECT on the view is refused; with a security_invoker view, a role
-- without SELECT on the archive is refused when the archive is probed
RESET ROLE;
GRANT USAGE ON SCHEMA vp TO ac_other;
SET ROLE ac_other;
SELECT try($$SELECT id FROM vp.t WHERE id = 7$$);
SELECT try($$SELECT id FROM vp.t WHERE id = 1003$$);
SELECT try($$UPDATE vp.t SET note = 'x' WHERE id = 7$$);
RESET ROLE;
SET ROLE ac_owner;
GRANT SELECT ON vp.t, vp.t_current TO ac_other;
ALTER VIEW vp.t SET (security_invoker = true);
SET ROLE ac_other;
SELECT try($$SELECT id FROM vp.t WHERE id = 1003$$);
SELECT try($$SELECT id FROM vp.t WHERE id = 7$$);
SELECT try($$SELECT id FROM (SELECT id, note FROM vp.t_current UNION ALL SELECT id, note FROM vp.t_archive) u WHERE id = 7$$);
RESET ROLE;
SET ROLE ac_owner;
ALTER VIEW vp.t RESET (security_invoker);
REVOKE SELECT ON vp.t, vp.t_current FROM ac_other;

-- a sub-select reading a tier too: both tiers planned, nothing lost
SELECT plan_of($$SELECT id FROM vp.t t WHERE id = 15 AND EXISTS (SELECT 1 FROM vp.t_current c WHERE c.cid = t.cid)$$);
SELECT id FROM vp.t t WHERE id = 15 AND EXISTS (SELECT 1 FROM vp.t_archive c WHERE c.cid = t.cid);
SELECT plan_of($$SELECT id FROM vp.t t WHERE id = 15 AND EXISTS (SELECT 1 FROM vp.t_archive c WHERE c.cid = t.cid)$$);

-- constraint_exclusion = on and a CHECK of <t>_current that the archived row
-- fails: both tiers planned (the current tier alone would be proven empty)
ALTER TABLE vp.t_current ADD CONSTRAINT recent CHECK (ts >= '2025-01-01') NOT VALID;
SET constraint_exclusion = on;
SELECT plan_of($$SELECT id FROM vp.t WHERE id = 16 AND ts = '2020-01-01 00:16'$$);
SELECT id FROM vp.t WHERE id = 16 AND ts = '2020-01-01 00:16';
RESET constraint_exclusion;
ALTER TABLE vp.t_current DROP CONSTRAINT recent;

-- an archive with a child of its own: both tiers planned
CREATE TABLE vp.arc_child () INHERITS (vp.t_archive);
SELECT plan_of($$SELECT id FROM vp.t WHERE id = 17$$);
DROP TABLE vp.arc_child;
-- (pg_class.relhassubclass stays set after the child's drop: still both)
SELECT plan_of($$SELECT id FROM vp.t WHERE id = 17$$);

SELECT archive_cluster_unregister('vp.t') AS rows_back;
SELECT count(*) FROM vp.t;
RESET ROLE;
DROP SCHEMA vp CASCADE;

-- a database without the extension, the library loaded: inheritance parents
-- and UNION ALL views are planned as always (nothing to look up)
CREATE DATABASE ac_probe_noext;
\c ac_probe_noext
CREATE TABLE p (id int PRIMARY KEY, v int);
CREATE TABLE c () INHERITS (p);
INSERT INTO p VALUES (1, 1);
INSERT INTO c VALUES (1, 2);
SELECT * FROM p WHERE id = 1 ORDER BY v;
CREATE TABLE a (id int PRIMARY KEY, v int);
CREATE TABLE b (id int PRIMARY KEY, v int);
INSERT INTO a VALUES (1, 1);
INSERT INTO b VALUES (1, 2);
CREATE VIEW u AS SELECT id, v FROM a UNION ALL SELECT id, v FROM b;
SELECT * FROM u WHERE id = 1 ORDER BY v;
\c contrib_regression
DROP DATABASE ac_probe_noext;
