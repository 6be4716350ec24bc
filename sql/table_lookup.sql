-- Table mode: a look-up by one key of a unique index stops at the tier that
-- holds the row (the custom scan ArchiveClusterTier; a SELECT of the table
-- alone is planned without the archive, ArchiveClusterProbe, table_probe.sql);
-- anything else reads both tiers.
CREATE SCHEMA tl;
GRANT USAGE, CREATE ON SCHEMA tl TO ac_owner;
SET ROLE ac_owner;
CREATE TABLE tl.t (
	id int PRIMARY KEY,
	ts timestamp NOT NULL,
	cid int NOT NULL,
	code text,
	part int,
	v int NOT NULL DEFAULT 0,
	UNIQUE (part, v)
);
CREATE INDEX t_cid_ts ON tl.t (cid, ts);
CREATE UNIQUE INDEX t_code ON tl.t (code) WHERE code IS NOT NULL;
INSERT INTO tl.t (id, ts, cid, code, part)
SELECT i, timestamp '2020-01-01' + i * interval '1 minute', i % 10, 'c' || i, i
FROM generate_series(1, 200) i;
SELECT archive_cluster_register('tl.t', '{cid,ts}', 'ts', '1 day', mode => 'table');
SELECT rows_moved FROM archive_cluster_run('tl.t', force => true);
-- ids 1-200 archived, 1001-1010 in ONLY tl.t
INSERT INTO tl.t (id, ts, cid, code, part)
SELECT i, timestamp '2030-01-01' + i * interval '1 minute', i % 10, 'c' || i, i
FROM generate_series(1001, 1010) i;
ANALYZE tl.t, tl.t_archive;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- a key in ONLY tl.t: the archive's scan is never run
EXPLAIN (costs off) SELECT * FROM tl.t WHERE id = 1005;
SELECT analyzed($$SELECT * FROM tl.t WHERE id = 1005$$);
-- an archived key: both scans run
SELECT analyzed($$SELECT * FROM tl.t WHERE id = 5$$);
-- a key in neither
SELECT analyzed($$SELECT * FROM tl.t WHERE id = 99999$$);
SELECT tableoid::regclass, id, code FROM tl.t WHERE id IN (5) UNION ALL
SELECT tableoid::regclass, id, code FROM tl.t WHERE id = 1005 UNION ALL
SELECT tableoid::regclass, id, code FROM tl.t WHERE 1005 = id UNION ALL
SELECT tableoid::regclass, id, code FROM tl.t WHERE id = 99999;
-- the rows are the tiers' scans' own: expressions, joins and aggregates above
-- the scan read them right, whichever tier they come from
SELECT *, length(code) AS len FROM tl.t WHERE id = 1005;
SELECT *, length(code) AS len FROM tl.t WHERE id = 5;
SELECT sum(id), max(code) FROM tl.t WHERE id = 1005;
SELECT o.k, t.* FROM (VALUES (5), (1005)) o(k) JOIN LATERAL
	(SELECT * FROM tl.t WHERE t.id = o.k) t ON true ORDER BY o.k;
-- every column of a two-column unique key
SELECT analyzed($$SELECT id FROM tl.t WHERE part = 1005 AND v = 0$$);
-- ... but not one of them
EXPLAIN (costs off) SELECT id FROM tl.t WHERE part = 1005;
-- an extra qual that the row in ONLY tl.t fails: the archive is read
SELECT id FROM tl.t WHERE id = 1005 AND v > 0;

-- not a look-up of one key: an Append of both tiers, as before
EXPLAIN (costs off) SELECT * FROM tl.t WHERE id = ANY ('{5,1005}');
EXPLAIN (costs off) SELECT * FROM tl.t WHERE id BETWEEN 5 AND 1005;
EXPLAIN (costs off) SELECT * FROM tl.t WHERE cid = 5;
EXPLAIN (costs off) SELECT * FROM tl.t WHERE code = 'c5';
EXPLAIN (costs off) SELECT * FROM ONLY tl.t WHERE id = 1005;
SELECT count(*) FROM tl.t WHERE id = ANY ('{5,1005}');

-- prepared, with a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE one(int) AS SELECT tableoid::regclass, id FROM tl.t WHERE id = $1;
EXECUTE one(1005);
EXECUTE one(5);
EXECUTE one(0);
SELECT analyzed($$EXECUTE one(1005)$$);
DEALLOCATE one;
RESET plan_cache_mode;

-- the inner side of a nested loop: each look-up decides again
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT analyzed($$SELECT k, t.id, t.v FROM (VALUES (5), (1005), (1006), (0)) v(k) JOIN tl.t ON t.id = v.k$$, false);
SELECT k, t.tableoid::regclass, t.id FROM (VALUES (5), (1005), (1006), (0)) v(k)
JOIN tl.t ON t.id = v.k ORDER BY k;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- UPDATE, DELETE and row locks find the row in either tier
EXPLAIN (costs off) UPDATE tl.t SET v = v + 1 WHERE id = 1005;
UPDATE tl.t SET v = v + 1 WHERE id = 1005 RETURNING tableoid::regclass, id, v;
UPDATE tl.t SET v = v + 1 WHERE id = 5 RETURNING tableoid::regclass, id, v;
DELETE FROM tl.t WHERE id = 1006 RETURNING tableoid::regclass, id;
DELETE FROM tl.t WHERE id = 6 RETURNING tableoid::regclass, id;
SELECT tableoid::regclass, id FROM tl.t WHERE id = 1007 FOR UPDATE;
SELECT tableoid::regclass, id FROM tl.t WHERE id = 7 FOR SHARE;
-- a scrollable cursor reads backwards as well
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id FROM tl.t WHERE id = 1008;
FETCH NEXT FROM c;
FETCH NEXT FROM c;
FETCH PRIOR FROM c;
COMMIT;

-- the archive's table and index count as in use by an open cursor that has
-- not read them yet, as they would without the skip
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM tl.t WHERE id = 9;
SELECT try($$ALTER TABLE tl.t_archive DROP CONSTRAINT t_archive_pkey$$);
SELECT try($$TRUNCATE tl.t_archive$$);
FETCH NEXT FROM c;
COMMIT;

-- archive_cluster.tier_lookup = off: both tiers read
SET archive_cluster.tier_lookup = off;
EXPLAIN (costs off) SELECT * FROM tl.t WHERE id = 1005;
RESET archive_cluster.tier_lookup;

-- under SERIALIZABLE, both tiers are read (the archive's predicate locks)
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT analyzed($$SELECT id, v FROM tl.t WHERE id = 1005$$);
COMMIT;

-- a look-up by the same key in the archive first (ONLY the archive) is plain
EXPLAIN (costs off) SELECT * FROM tl.t_archive WHERE id = 5;

-- an inheritance pair that is not registered: both read, as PostgreSQL does
CREATE TABLE tl.p (id int PRIMARY KEY, ts timestamp NOT NULL);
CREATE TABLE tl.c () INHERITS (tl.p);
ALTER TABLE tl.c ADD PRIMARY KEY (id);
EXPLAIN (costs off) SELECT * FROM tl.p WHERE id = 1;
-- ... nor with guard indexes of its own
CREATE INDEX ON tl.p USING archive_cluster_guard (ts);
CREATE INDEX ON tl.c USING archive_cluster_guard (ts);
EXPLAIN (costs off) SELECT * FROM tl.p WHERE id = 1;
DROP TABLE tl.p CASCADE;

-- unregistered: one table, a plain index scan
SELECT archive_cluster_unregister('tl.t') AS rows_back;
EXPLAIN (costs off) SELECT * FROM tl.t WHERE id = 1005;
SELECT count(*), sum(v) FROM tl.t;
RESET ROLE;
DROP SCHEMA tl CASCADE;
