-- Table mode: a SELECT of the table alone by one key of a unique index is
-- planned as on the plain table (the table's own rows), and its custom scan
-- ArchiveClusterProbe looks the key up in the archive only when they have no
-- row (src/plan/probe_table.c, probe_scan.c).
CREATE SCHEMA tp;
GRANT USAGE, CREATE ON SCHEMA tp TO ac_owner;
SET ROLE ac_owner;
-- a dropped column before registration: the archive's rows are laid out
-- otherwise than the table's, and are converted
CREATE TABLE tp.t (
	gone int,
	id int PRIMARY KEY,
	ts timestamp NOT NULL,
	cid int NOT NULL,
	note text
);
ALTER TABLE tp.t DROP COLUMN gone;
INSERT INTO tp.t (id, ts, cid, note)
SELECT i, timestamp '2020-01-01' + i * interval '1 minute', i % 10, 'n' || i
FROM generate_series(1, 100) i;
SELECT archive_cluster_register('tp.t', '{cid,ts}', 'ts', '1 day', mode => 'table');
SELECT rows_moved FROM archive_cluster_run('tp.t', force => true);
-- ids 1-100 archived, 1001-1005 in ONLY tp.t
INSERT INTO tp.t (id, ts, cid, note)
SELECT i, timestamp '2030-01-01' + i * interval '1 minute', i % 10, 'n' || i
FROM generate_series(1001, 1005) i;
ANALYZE tp.t, tp.t_archive;
SELECT attnum, attname FROM pg_attribute WHERE attrelid = 'tp.t_archive'::regclass AND attnum > 0 ORDER BY 1;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- a row of the table: the archive is not probed
SELECT analyzed($$SELECT * FROM tp.t WHERE id = 1003$$);
-- an archived row: probed, converted, tableoid the archive's
SELECT analyzed($$SELECT * FROM tp.t WHERE id = 7$$);
SELECT tableoid::regclass, * FROM tp.t WHERE id = 7;
SELECT tableoid::regclass, * FROM tp.t WHERE id = 1003;
SELECT tableoid::regclass, t FROM tp.t WHERE 7 = id;
-- in neither; a NULL key
SELECT count(*) FROM tp.t WHERE id = 99999;
SELECT count(*) FROM tp.t WHERE id = NULL::int;
-- the other quals apply to an archived row too
SELECT id FROM tp.t WHERE id = 7 AND note = 'n7';
SELECT id FROM tp.t WHERE id = 7 AND note = 'other';
-- a key of another type of the index's operator family (int8 = int4)
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 7::bigint$$);
SELECT id, note FROM tp.t WHERE id = 7::bigint;
SELECT id, note FROM tp.t WHERE 1004::bigint = id;
-- a key computed once: a sub-select (an InitPlan), a stable function
SELECT line FROM analyzed($$SELECT id FROM tp.t WHERE id = (SELECT 8)$$) line
WHERE line ~ 'Custom Scan|Archive Probes';
SELECT id, note FROM tp.t WHERE id = (SELECT 8);
SELECT id, note FROM tp.t WHERE id = (SELECT max(id) FROM tp.t) - 1;
SELECT id FROM tp.t WHERE id = length(current_user) - length(current_user) + 9;
-- aggregates, expressions and ORDER BY above the scan
SELECT count(*), max(note), min(id * 2) FROM tp.t WHERE id = 10;
SELECT id + 1 AS next, upper(note) FROM tp.t WHERE id = 10 ORDER BY note;
-- an index-only path becomes an index scan under the probe
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 11$$);
SELECT id FROM tp.t WHERE id = 11;

-- prepared statements: custom plans and the generic plan
PREPARE one(int) AS SELECT id, note, tableoid::regclass FROM tp.t WHERE id = $1;
EXECUTE one(12);
EXECUTE one(1002);
SET plan_cache_mode = force_generic_plan;
PREPARE gen(bigint) AS SELECT id, note, tableoid::regclass FROM tp.t WHERE id = $1;
EXECUTE gen(12);
EXECUTE gen(1002);
EXECUTE gen(NULL);
SELECT analyzed($$EXECUTE gen(13)$$);
RESET plan_cache_mode;

-- not pruned: both tiers planned as before
-- (a volatile key, a range, a row lock, a join, a system column, ONLY)
SELECT plan_of($$SELECT id FROM tp.t WHERE id = (random() * 0)::int + 5$$);
SELECT plan_of($$SELECT id FROM tp.t WHERE id IN (5, 1001)$$);
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 5 FOR UPDATE$$);
SELECT plan_of($$SELECT t.id FROM tp.t, (VALUES (5)) v(k) WHERE t.id = 5$$);
SELECT plan_of($$SELECT xmin IS NOT NULL FROM tp.t WHERE id = 5$$);
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 5 AND current_user IS NOT NULL$$);
SELECT id FROM ONLY tp.t WHERE id = 5;
SET archive_cluster.tier_lookup = off;
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 5$$);
RESET archive_cluster.tier_lookup;

-- under SERIALIZABLE the archive is probed for every key (its predicate
-- locks); the row comes once
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT analyzed($$SELECT id FROM tp.t WHERE id = 1003$$);
COMMIT;

-- an open cursor holds the archive in use, as the Append's scan would
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM tp.t WHERE id = 14;
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT pg_temp.try($$TRUNCATE tp.t_archive$$);
FETCH NEXT FROM c;
COMMIT;
-- a scrollable cursor reads backwards as well
BEGIN;
DECLARE s SCROLL CURSOR FOR SELECT id FROM tp.t WHERE id = 15;
FETCH NEXT FROM s;
FETCH PRIOR FROM s;
FETCH NEXT FROM s;
COMMIT;

-- another child of the table: its rows would be missed, so nothing is
-- pruned while it is there (the plan cache notices it coming and going)
PREPARE again AS SELECT count(*) FROM tp.t WHERE id = 2001;
EXECUTE again;
CREATE TABLE tp.other () INHERITS (tp.t);
INSERT INTO tp.other (id, ts, cid) VALUES (2001, now(), 1);
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 2001$$);
EXECUTE again;
DROP TABLE tp.other;
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 2001$$);
EXECUTE again;

-- a table with row security: planned over both tiers
ALTER TABLE tp.t ENABLE ROW LEVEL SECURITY;
ALTER TABLE tp.t FORCE ROW LEVEL SECURITY;
CREATE POLICY odd ON tp.t USING (id % 2 = 1);
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 7$$);
SELECT id FROM tp.t WHERE id = 7;
SELECT id FROM tp.t WHERE id = 8;
DROP POLICY odd ON tp.t;
ALTER TABLE tp.t NO FORCE ROW LEVEL SECURITY;
ALTER TABLE tp.t DISABLE ROW LEVEL SECURITY;

-- a run moves rows between two look-ups of the same prepared statement
PREPARE look(int) AS SELECT id, tableoid::regclass FROM tp.t WHERE id = $1;
UPDATE tp.t SET ts = timestamp '2020-06-01' WHERE id = 1005;
EXECUTE look(1005);
SELECT rows_moved FROM archive_cluster_run('tp.t', force => true);
EXECUTE look(1005);

-- a sub-select reading the table or its archive: both tiers planned
SELECT plan_of($$SELECT id FROM tp.t t WHERE id = 18 AND EXISTS (SELECT 1 FROM ONLY tp.t o WHERE o.cid = t.cid)$$);
SELECT plan_of($$SELECT id FROM tp.t t WHERE id = 18 AND EXISTS (SELECT 1 FROM tp.t_archive a WHERE a.cid = t.cid)$$);
SELECT id FROM tp.t t WHERE id = 18 AND EXISTS (SELECT 1 FROM tp.t_archive a WHERE a.cid = t.cid);

-- a gating qual derived from two keys ("5 = $1"), tableoid read: a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE two(int) AS SELECT tableoid::regclass, id, note FROM tp.t WHERE id = 19 AND id = $1;
EXECUTE two(19);
EXECUTE two(20);
DEALLOCATE two;
-- archive_cluster.tier_lookup turned off after planning: the archive is
-- probed for every key
PREPARE cur(int) AS SELECT id FROM tp.t WHERE id = $1;
EXECUTE cur(1003);
SET archive_cluster.tier_lookup = off;
SELECT analyzed($$EXECUTE cur(1003)$$);
RESET archive_cluster.tier_lookup;
RESET plan_cache_mode;

-- constraint_exclusion = on and a CHECK of the table: both tiers planned
ALTER TABLE tp.t ADD CONSTRAINT recent CHECK (ts >= '2025-01-01') NO INHERIT NOT VALID;
SET constraint_exclusion = on;
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 21 AND ts = '2020-01-01 00:21'$$);
SELECT id FROM tp.t WHERE id = 21 AND ts = '2020-01-01 00:21';
RESET constraint_exclusion;
ALTER TABLE tp.t DROP CONSTRAINT recent;

-- UPDATE and DELETE by a constant key beyond every archived key: planned
-- over ONLY <t>, the key checked again at executor start.  Not so: a key the
-- archive may hold, another type, a parameter of a generic plan,
-- SERIALIZABLE, and a table with a dropped column (tp.t: its rows would come
-- rebuilt, without the ctid the UPDATE needs)
CREATE TABLE tp.d (id int PRIMARY KEY, ts timestamp NOT NULL, cid int NOT NULL, note text);
INSERT INTO tp.d SELECT i, timestamp '2020-01-01' + i * interval '1 minute', i % 10, 'n' || i
FROM generate_series(1, 100) i;
SELECT archive_cluster_register('tp.d', '{cid,ts}', 'ts', '1 day', mode => 'table');
SELECT rows_moved FROM archive_cluster_run('tp.d', force => true);
INSERT INTO tp.d SELECT i, timestamp '2030-01-01' + i * interval '1 minute', i % 10, 'n' || i
FROM generate_series(1001, 1005) i;
ANALYZE tp.d, tp.d_archive;
SELECT plan_of($$UPDATE tp.d SET note = 'x' WHERE id = 1004$$);
SELECT plan_of($$DELETE FROM tp.d WHERE id = 1004$$);
SELECT plan_of($$UPDATE tp.d SET note = 'x' WHERE id = 50$$);
SELECT plan_of($$UPDATE tp.d SET note = 'x' WHERE id = 1004::bigint$$);
SELECT plan_of($$UPDATE tp.t SET note = 'x' WHERE id = 1004$$);
UPDATE tp.d SET note = 'u1004' WHERE id = 1004 RETURNING tableoid::regclass, id, note;
UPDATE tp.d SET note = 'u50' WHERE id = 50 RETURNING tableoid::regclass, id, note;
UPDATE tp.d SET note = 'none' WHERE id = 99999;
BEGIN;
DELETE FROM tp.d WHERE id = 1004 RETURNING tableoid::regclass, id;
ROLLBACK;
SET plan_cache_mode = force_custom_plan;
PREPARE upc(int) AS UPDATE tp.d SET note = note || '+' WHERE id = $1;
SELECT plan_of($$EXECUTE upc(1004)$$);
SET plan_cache_mode = force_generic_plan;
PREPARE upg(int) AS UPDATE tp.d SET note = note || '+' WHERE id = $1;
SELECT plan_of($$EXECUTE upg(1004)$$);
RESET plan_cache_mode;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT plan_of($$UPDATE tp.d SET note = 'x' WHERE id = 1004$$);
COMMIT;
-- a statement prepared with its key, the row archived since: 40001 once
-- (the session's plans are made again), then the archived row is updated
PREPARE up1004 AS UPDATE tp.d SET note = note || '!' WHERE id = 1004 RETURNING tableoid::regclass, id, note;
EXECUTE up1004;
UPDATE tp.d SET ts = timestamp '2020-06-02' WHERE id = 1004;
SELECT rows_moved FROM archive_cluster_run('tp.d', force => true);
SELECT try($$EXECUTE up1004$$);
EXECUTE up1004;
DEALLOCATE up1004;
-- the same with a sub-select in its quals (an InitPlan, set up after the
-- scan's start): checked at the first row, with the sub-select's value
PREPARE upq AS UPDATE tp.d SET note = note || '?'
WHERE id = 1005 AND note = (SELECT min(x) FROM (VALUES ('n1005')) v(x))
RETURNING tableoid::regclass, id, note;
SELECT plan_of($$EXECUTE upq$$);
UPDATE tp.d SET ts = timestamp '2020-06-03' WHERE id = 1005;
SELECT rows_moved FROM archive_cluster_run('tp.d', force => true);
SELECT try($$EXECUTE upq$$);
EXECUTE upq;
DEALLOCATE upq;
-- a cursor's plan reads both tiers: WHERE CURRENT OF finds its row in either
SELECT id, tableoid::regclass FROM tp.d WHERE id IN (50, 1003) ORDER BY id;
BEGIN;
DECLARE c1 CURSOR FOR SELECT id FROM tp.d WHERE id = 1003;
FETCH c1;
UPDATE tp.d SET note = 'cur1003' WHERE CURRENT OF c1 RETURNING tableoid::regclass, id, note;
DECLARE c2 CURSOR FOR SELECT id FROM tp.d WHERE id = 50;
FETCH c2;
UPDATE tp.d SET note = 'cur50' WHERE CURRENT OF c2 RETURNING tableoid::regclass, id, note;
COMMIT;
SELECT plan_of($$DECLARE c CURSOR FOR SELECT id FROM tp.d WHERE id = 1003$$);
-- a PL/pgSQL cursor too
DO $$
DECLARE
	c CURSOR FOR SELECT id FROM tp.d WHERE id = 1002;
	r record;
BEGIN
	OPEN c;
	FETCH c INTO r;
	UPDATE tp.d SET note = 'plpgsql' WHERE CURRENT OF c;
	CLOSE c;
END
$$;
SELECT tableoid::regclass, id, note FROM tp.d WHERE id = 1002;
SELECT archive_cluster_unregister('tp.d') AS rows_back;

SELECT archive_cluster_unregister('tp.t') AS rows_back;
SELECT plan_of($$SELECT id FROM tp.t WHERE id = 5$$);
SELECT count(*) FROM tp.t;
RESET ROLE;
DROP SCHEMA tp CASCADE;
