-- Table mode: the registered table stays a table; <t>_archive is its
-- inheritance child; every unique index holds across the two.
CREATE SCHEMA tm;
GRANT USAGE, CREATE ON SCHEMA tm TO ac_owner;
GRANT USAGE ON SCHEMA tm TO ac_other;
SET ROLE ac_owner;
CREATE TABLE tm."Orders" (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	ts timestamp NOT NULL,
	cid int NOT NULL,
	email text UNIQUE,
	code text,
	n int NOT NULL DEFAULT 0 CHECK (n >= 0),
	gone int,
	twice int GENERATED ALWAYS AS (n * 2) STORED
);
ALTER TABLE tm."Orders" DROP COLUMN gone;
CREATE INDEX orders_cid_ts ON tm."Orders" (cid, ts);
CREATE UNIQUE INDEX orders_code ON tm."Orders" (lower(code)) WHERE code IS NOT NULL;
INSERT INTO tm."Orders" (ts, cid, email, code)
SELECT timestamp '2020-01-01' + i * interval '1 minute', i % 10, 'e' || i, 'C' || i
FROM generate_series(1, 500) i;
GRANT SELECT, INSERT, UPDATE, DELETE ON tm."Orders" TO ac_other;
CREATE TEMP TABLE tm_before AS
SELECT 'tm."Orders"'::regclass::oid AS oid, checksum('tm."Orders"') AS sum;
RESET ROLE;

-- arguments
SELECT try($$SELECT archive_cluster_register('tm."Orders"', '{cid,ts}', 'ts', mode => 'tables')$$);
SELECT try($$SELECT archive_cluster_register('tm."Orders"', '{cid,ts}', 'ts', mode => NULL)$$);

SET ROLE ac_owner;
SELECT archive_cluster_register('tm."Orders"', '{cid,ts}', 'ts', '1 day', mode => 'table');
RESET ROLE;

-- the same table (OID, rows), an inheritance child with the same indexes
SELECT t.oid = b.oid AS same_oid, checksum('tm."Orders"') = b.sum AS same_rows
FROM tm_before b, (SELECT 'tm."Orders"'::regclass::oid) t(oid);
SELECT relation, mode, current_table, archive_table FROM archive_cluster_tables
WHERE relation = 'tm."Orders"'::regclass;
SELECT inhrelid::regclass, inhparent::regclass FROM pg_inherits
WHERE inhparent = 'tm."Orders"'::regclass;
SELECT indexrelid::regclass, pg_get_indexdef(indexrelid) FROM pg_index
WHERE indrelid = 'tm."Orders_archive"'::regclass ORDER BY 1::text;
SELECT tgrelid::regclass, tgname FROM pg_trigger
WHERE tgrelid IN ('tm."Orders"'::regclass, 'tm."Orders_archive"'::regclass) ORDER BY 1::text;
-- statements on the table reach the archive with the table's privileges only
SELECT has_table_privilege('ac_other', 'tm."Orders_archive"', 'SELECT') AS other_reads_archive;

-- a run moves every old row out of ONLY "Orders"
SELECT status, rows_moved FROM archive_cluster_run('tm."Orders"', force => true);
SELECT tableoid::regclass, count(*) FROM tm."Orders" GROUP BY 1 ORDER BY 1::text;
SELECT checksum('tm."Orders"') = (SELECT sum FROM tm_before) AS same_rows;

-- every unique index holds across the tiers, with a plain table's error
SET ROLE ac_other;
INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'new1') RETURNING id, twice;
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'e7')$$);
SELECT try($$INSERT INTO tm."Orders" (ts, cid, code) VALUES (now(), 1, 'c7')$$);
SELECT try($$UPDATE tm."Orders" SET email = 'e8' WHERE email = 'new1'$$);
SELECT try($$UPDATE tm."Orders" SET email = 'new1' WHERE email = 'e9'$$);
SELECT try($$UPDATE tm."Orders" SET code = 'c501' WHERE id = 9$$);
-- NULLs are distinct; a key moved within one tier is fine
INSERT INTO tm."Orders" (ts, cid) VALUES (now(), 1), (now(), 2);
UPDATE tm."Orders" SET email = 'e9-moved' WHERE email = 'e9';
UPDATE tm."Orders" SET email = 'e9' WHERE email = 'e9-moved';
-- identity: as on the table itself
SELECT try($$INSERT INTO tm."Orders" (id, ts, cid) VALUES (5, now(), 1)$$);
SELECT try($$INSERT INTO tm."Orders" (id, ts, cid) OVERRIDING SYSTEM VALUE VALUES (5, now(), 1)$$);
-- updates of archived rows stay in the archive, checked as on the table
UPDATE tm."Orders" SET n = n + 1 WHERE id IN (3, 4) RETURNING tableoid::regclass, id, n, twice;
SELECT try($$UPDATE tm."Orders" SET n = -1 WHERE id = 3$$);

-- ON CONFLICT and MERGE
INSERT INTO tm."Orders" (id, ts, cid, email) OVERRIDING SYSTEM VALUE
VALUES (3, now(), 1, 'x3'), (9000, now(), 1, 'x9000')
ON CONFLICT DO NOTHING RETURNING id, email;
INSERT INTO tm."Orders" (id, ts, cid, email) OVERRIDING SYSTEM VALUE
VALUES (9001, now(), 1, 'e10') ON CONFLICT (email) DO NOTHING RETURNING id;
SELECT try($$INSERT INTO tm."Orders" (id, ts, cid, email) OVERRIDING SYSTEM VALUE
VALUES (9002, now(), 1, 'e11') ON CONFLICT (id) DO NOTHING$$);
INSERT INTO tm."Orders" (id, ts, cid, email) OVERRIDING SYSTEM VALUE
VALUES (9000, now(), 1, 'x9000') ON CONFLICT (id) DO UPDATE SET n = "Orders".n + 5
RETURNING id, n;
-- DO UPDATE meeting an archived row: back in ONLY "Orders", updated there
INSERT INTO tm."Orders" (id, ts, cid, email) OVERRIDING SYSTEM VALUE
VALUES (4, now(), 1, 'x4') ON CONFLICT (id) DO UPDATE SET n = "Orders".n + 5
RETURNING tableoid::regclass, id, n, email;
-- ... as on a plain table: not twice in one statement; a false WHERE updates nothing
SELECT try($$INSERT INTO tm."Orders" (id, ts, cid) OVERRIDING SYSTEM VALUE
VALUES (7, now(), 1), (7, now(), 1) ON CONFLICT (id) DO UPDATE SET n = "Orders".n + 1$$);
INSERT INTO tm."Orders" (id, ts, cid) OVERRIDING SYSTEM VALUE VALUES (8, now(), 1)
ON CONFLICT (id) DO UPDATE SET n = 0 WHERE false RETURNING id;
BEGIN ISOLATION LEVEL REPEATABLE READ;
INSERT INTO tm."Orders" (id, ts, cid) OVERRIDING SYSTEM VALUE VALUES (10, now(), 1)
ON CONFLICT (id) DO UPDATE SET n = "Orders".n + 1 RETURNING tableoid::regclass, id, n;
COMMIT;
SELECT tableoid::regclass, id, n FROM tm."Orders" WHERE id IN (4, 7, 8, 10) ORDER BY id;
-- an UPDATE of the same statement does not see the row the upsert changed, as on a plain table
WITH u AS (INSERT INTO tm."Orders" (id, ts, cid) OVERRIDING SYSTEM VALUE VALUES (7, now(), 1)
		   ON CONFLICT (id) DO UPDATE SET n = "Orders".n + 1 RETURNING id)
UPDATE tm."Orders" SET n = n + 100 WHERE id IN (SELECT id FROM u);
SELECT tableoid::regclass, id, n FROM tm."Orders" WHERE id = 7;
WITH w AS (INSERT INTO tm."Orders" (id, ts, cid) OVERRIDING SYSTEM VALUE
		   VALUES (5, now(), 1) ON CONFLICT DO NOTHING RETURNING id)
SELECT count(*) AS inserted FROM w;
MERGE INTO tm."Orders" o USING (VALUES (6::bigint), (9003)) v(id) ON o.id = v.id
WHEN MATCHED THEN UPDATE SET n = o.n + 100
WHEN NOT MATCHED THEN INSERT (ts, cid, email) VALUES (now(), 3, 'merged');
SELECT tableoid::regclass, id, n FROM tm."Orders" WHERE id = 6 OR email = 'merged';
RESET ROLE;
-- into the archive directly, DO UPDATE does not take a row of the table
SELECT try($$INSERT INTO tm."Orders_archive" (id, ts, cid) OVERRIDING SYSTEM VALUE
VALUES (9000, now(), 1) ON CONFLICT (id) DO UPDATE SET n = 1$$);
-- a row the statement itself archived is not updated by it, as on a plain table
SELECT try($$WITH a AS (INSERT INTO tm."Orders_archive" (id, ts, cid) OVERRIDING SYSTEM VALUE
						VALUES (9100, now(), 1) RETURNING id)
INSERT INTO tm."Orders" (id, ts, cid) OVERRIDING SYSTEM VALUE SELECT id, now(), 1 FROM a
ON CONFLICT (id) DO UPDATE SET n = 1$$);

-- no duplicate anywhere
SELECT count(*) = count(DISTINCT id) AS ids_unique,
	   count(email) = count(DISTINCT email) AS emails_unique
FROM tm."Orders";

-- one statement swapping keys across the tiers fails at its first row, as
-- a unique index checks each row as it is written (e7 archived, x9000 not)
SET ROLE ac_other;
SELECT try($$UPDATE tm."Orders" SET email = CASE email WHEN 'e7' THEN 'x9000' ELSE 'e7' END
WHERE email IN ('e7', 'x9000')$$);
-- 'z1' sorts after every archived email: it is not looked up in the archive
-- (the table's own index refuses the duplicate); once a run has archived
-- it, the cached bound of the archive's keys is read again and it is found
INSERT INTO tm."Orders" (ts, cid, email) VALUES ('2021-01-01', 1, 'z1');
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'z1')$$);
RESET ROLE;
SELECT status, rows_moved FROM archive_cluster_run('tm."Orders"', force => true);
SET ROLE ac_other;
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'z1')$$);
SELECT try($$UPDATE tm."Orders" SET email = 'z1' WHERE email = 'x9000'$$);
RESET ROLE;

-- the check is made for whoever writes: through a view owned by another
-- role, and under row security, with the error a plain table gives
GRANT USAGE ON SCHEMA tm TO ac_reader;
SET ROLE ac_owner;
CREATE VIEW tm.orders_in AS SELECT id, ts, cid, email FROM tm."Orders";
GRANT INSERT ON tm.orders_in TO ac_reader;
SET ROLE ac_reader;
SELECT try($$INSERT INTO tm.orders_in (ts, cid, email) VALUES (now(), 1, 'e12')$$);
SELECT try($$INSERT INTO tm.orders_in (ts, cid, email) VALUES (now(), 1, 'via view')$$);
SET ROLE ac_owner;
ALTER TABLE tm."Orders" ENABLE ROW LEVEL SECURITY;
CREATE POLICY cid1 ON tm."Orders" USING (true) WITH CHECK (cid = 1);
SET ROLE ac_other;
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'e13')$$);
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'row security')$$);
SET ROLE ac_owner;
DROP POLICY cid1 ON tm."Orders";
ALTER TABLE tm."Orders" DISABLE ROW LEVEL SECURITY;
-- the trigger function is archive_cluster's own, for ON CONFLICT only
SELECT try($$SELECT archive_cluster_unique_check()$$);
CREATE TABLE tm.own_trigger (id int);
CREATE TRIGGER t BEFORE INSERT ON tm.own_trigger FOR EACH ROW EXECUTE FUNCTION archive_cluster_unique_check('nothing', '1');
SELECT try($$INSERT INTO tm.own_trigger VALUES (1)$$);
RESET ROLE;

-- the guard indexes (access method archive_cluster_guard, on the primary key and the age column):
-- never scanned, never dropped alone, no storage parameters; one on a table
-- that is not registered does nothing
SELECT c.relname, pg_get_indexdef(c.oid), pg_relation_size(c.oid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
WHERE i.indrelid IN ('tm."Orders"'::regclass, 'tm."Orders_archive"'::regclass)
  AND am.amname = 'archive_cluster_guard' ORDER BY 1;
SET enable_seqscan = off;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM tm."Orders" WHERE ts = '2020-01-01';
RESET enable_seqscan;
RESET enable_indexscan;
SET ROLE ac_owner;
SELECT try($$DROP INDEX tm."Orders_id_ts_archive_cluster_guard"$$);
SELECT try($$DROP INDEX tm."Orders_archive_id_ts_archive_cluster_guard"$$);
DROP INDEX CONCURRENTLY tm."Orders_id_ts_archive_cluster_guard";
-- a guard may be created again (to come after a unique index created
-- later) and the old one dropped then
CREATE INDEX orders_guard_again ON tm."Orders" USING archive_cluster_guard (id, ts);
DROP INDEX tm."Orders_id_ts_archive_cluster_guard";
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'e7')$$);
SELECT try($$ALTER TABLE tm."Orders" DROP COLUMN ts CASCADE$$);
CREATE TABLE tm.plain (id int PRIMARY KEY, ts timestamp NOT NULL);
SELECT try($$CREATE INDEX ON tm.plain USING archive_cluster_guard (ts) WITH (fillfactor = 50)$$);
SELECT try($$CREATE INDEX ON tm.plain USING archive_cluster_guard (ts) WHERE id > 0$$);
SELECT try($$CREATE INDEX ON tm.plain USING archive_cluster_guard ((ts + interval '1 day'))$$);
CREATE INDEX plain_guard ON tm.plain USING archive_cluster_guard (ts);
CREATE INDEX plain_guard2 ON tm.plain USING archive_cluster_guard (ts, id);
INSERT INTO tm.plain VALUES (1, now()), (2, now());
COPY tm.plain FROM stdin;
3	2020-01-01
\.
UPDATE tm.plain SET id = 4 WHERE id = 3;
SELECT count(*) FROM tm.plain;
DROP TABLE tm.plain;
-- rows written by a statement that another statement's row runs (a volatile
-- function inserting as each row is read), and rows of a block that catches
-- the error of one: each checked once, at its own statement's end
CREATE FUNCTION tm.side_insert(e text) RETURNS text LANGUAGE sql VOLATILE
AS $$ INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, e) RETURNING email $$;
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email)
			 SELECT now(), 1, tm.side_insert('side ' || g) || ' outer' FROM generate_series(1, 3) g$$);
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email)
			 SELECT now(), 1, tm.side_insert(CASE g WHEN 2 THEN 'e14' ELSE 'side2 ' || g END) FROM generate_series(1, 3) g$$);
SELECT count(*) FROM tm."Orders" WHERE email LIKE 'side%';
-- a data-modifying CTE the query does not read, checked in its statement;
-- a row updated (HOT) by a later row's function before its check
SELECT try($$WITH c AS (INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'e17')) SELECT 1$$);
CREATE FUNCTION tm.touch(c text) RETURNS text LANGUAGE sql VOLATILE
AS $$ UPDATE tm."Orders" SET n = n + 1 WHERE code = c RETURNING 'touched' $$;
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email, code)
			 SELECT now(), 1, CASE g WHEN 1 THEN 'e16' ELSE tm.touch('hot1') END, 'hot' || g
			 FROM generate_series(1, 2) g$$);
SELECT count(*) FROM tm."Orders" WHERE code LIKE 'hot%';
DO $$
DECLARE
	e text;
BEGIN
	FOREACH e IN ARRAY ARRAY['block 1', 'e15', 'block 2', 'block 1'] LOOP
		BEGIN
			INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, e);
		EXCEPTION WHEN unique_violation THEN
			RAISE NOTICE 'refused: %', e;
		END;
	END LOOP;
END
$$;
SELECT email FROM tm."Orders" WHERE email LIKE 'block%' ORDER BY 1;
RESET ROLE;
-- a subscriber (replica role) applies rows checked on the publisher
BEGIN;
SET LOCAL session_replication_role = replica;
INSERT INTO tm."Orders" (id, ts, cid, email) OVERRIDING SYSTEM VALUE VALUES (3, now(), 1, 'replica');
SELECT (SELECT count(*) FROM ONLY tm."Orders" WHERE id = 3) AS current,
       (SELECT count(*) FROM tm."Orders_archive" WHERE id = 3) AS archived;
ROLLBACK;

-- an index created on the table alone: runs refuse and say how to mend;
-- a unique one also refuses writes it cannot check
SET ROLE ac_owner;
CREATE INDEX orders_n ON tm."Orders" (n);
SELECT try($$SELECT * FROM archive_cluster_run('tm."Orders"', force => true)$$);
CREATE INDEX orders_archive_n ON tm."Orders_archive" (n);
SELECT status FROM archive_cluster_run('tm."Orders"', force => true);
CREATE UNIQUE INDEX orders_cid_email ON tm."Orders" (cid, email);
SELECT try($$INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'late')$$);
CREATE UNIQUE INDEX orders_archive_cid_email ON tm."Orders_archive" (cid, email);
INSERT INTO tm."Orders" (ts, cid, email) VALUES (now(), 1, 'late');
-- a unique index added later holds across the tiers from the start: with a
-- key in both tiers, the second of the pair fails as on a plain table
ALTER TABLE tm."Orders" ADD COLUMN ref int;
UPDATE tm."Orders" SET ref = 1 WHERE id IN (3, 9000) RETURNING tableoid::regclass, id;
CREATE UNIQUE INDEX orders_ref ON tm."Orders" (ref);
SELECT try($$CREATE UNIQUE INDEX orders_archive_ref ON tm."Orders_archive" (ref)$$);
SELECT try($$ALTER TABLE tm."Orders_archive" ADD CONSTRAINT orders_archive_ref UNIQUE (ref)$$);
UPDATE tm."Orders" SET ref = 2 WHERE id = 3;
ALTER TABLE tm."Orders_archive" ADD CONSTRAINT orders_archive_ref UNIQUE (ref);
SELECT try($$UPDATE tm."Orders" SET ref = 2 WHERE id = 9000$$);
-- what table mode cannot keep
CREATE TABLE tm.excl (id int PRIMARY KEY, ts timestamp NOT NULL, cid int NOT NULL,
	EXCLUDE USING btree (cid WITH =));
SELECT try($$SELECT archive_cluster_register('tm.excl', '{cid,ts}', 'ts', mode => 'table')$$);
CREATE TABLE tm.defer (id int PRIMARY KEY, ts timestamp NOT NULL, cid int NOT NULL,
	u int UNIQUE DEFERRABLE);
SELECT try($$SELECT archive_cluster_register('tm.defer', '{cid,ts}', 'ts', mode => 'table')$$);
CREATE TABLE tm.trig (id int PRIMARY KEY, ts timestamp NOT NULL, cid int NOT NULL);
CREATE FUNCTION tm.noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE TRIGGER t BEFORE UPDATE ON tm.trig FOR EACH ROW EXECUTE FUNCTION tm.noop();
SELECT try($$SELECT archive_cluster_register('tm.trig', '{cid,ts}', 'ts', mode => 'table')$$);
CREATE TABLE tm.ref (id int REFERENCES tm.trig);
DROP TRIGGER t ON tm.trig;
SELECT try($$SELECT archive_cluster_register('tm.trig', '{cid,ts}', 'ts', mode => 'table')$$);
DROP TABLE tm.ref, tm.excl, tm.defer;
-- a foreign key to a registered table is refused when it is created
SELECT try($$CREATE TABLE tm.ref2 (oid int PRIMARY KEY, pid bigint REFERENCES tm."Orders")$$);
CREATE TABLE tm.ref3 (oid int PRIMARY KEY, pid bigint);
SELECT try($$ALTER TABLE tm.ref3 ADD FOREIGN KEY (pid) REFERENCES tm."Orders"$$);
SELECT try($$ALTER TABLE tm.ref3 ADD FOREIGN KEY (pid) REFERENCES tm."Orders_archive"$$);
DROP TABLE tm.ref3;
-- a view on the table is fine: the table stays a table
CREATE VIEW tm.trig_v AS SELECT id FROM tm.trig;
SELECT archive_cluster_register('tm.trig', '{cid,ts}', 'ts', mode => 'table');

-- the guard is given the primary key and the age column: a row whose keys
-- are all beyond the archive's is not looked up; a key of another unique
-- index, or a key inside the archive's range, still is
CREATE TABLE tm.skip (cid int NOT NULL, n int NOT NULL, ts timestamp NOT NULL, email text UNIQUE,
	PRIMARY KEY (cid, n));
INSERT INTO tm.skip SELECT g % 3, g, '2020-01-01', 's' || g FROM generate_series(1, 30) g;
SELECT archive_cluster_register('tm.skip', '{cid,ts}', 'ts', '1 day', mode => 'table');
SELECT c.relname, pg_get_indexdef(c.oid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
WHERE i.indrelid IN ('tm.skip'::regclass, 'tm.skip_archive'::regclass)
  AND am.amname = 'archive_cluster_guard' ORDER BY 1;
SELECT status, rows_moved FROM archive_cluster_run('tm.skip', force => true);
INSERT INTO tm.skip VALUES (3, 1, now(), 'new'), (4, 1, now(), NULL), (4, 2, now(), NULL);
SELECT try($$INSERT INTO tm.skip VALUES (3, 2, now(), 's5')$$);
SELECT try($$INSERT INTO tm.skip VALUES (5, 1, now(), NULL), (5, 2, now(), 's30')$$);
SELECT try($$INSERT INTO tm.skip VALUES (1, 4, now(), 'x')$$);
SELECT try($$UPDATE tm.skip SET cid = 1, n = 7 WHERE email = 'new'$$);
INSERT INTO tm.skip VALUES (2, 100, now(), 'inside');
SELECT tableoid::regclass, count(*) FROM tm.skip GROUP BY 1 ORDER BY 1;
SELECT archive_cluster_unregister('tm.skip') AS rows_back;

-- without a row identity, the guard is on the age column alone
CREATE TABLE tm.nokey (ts timestamp NOT NULL, cid int NOT NULL, email text UNIQUE);
INSERT INTO tm.nokey VALUES ('2020-01-01', 1, 'k1'), ('2020-01-01', 2, NULL);
SELECT archive_cluster_register('tm.nokey', '{cid,ts}', 'ts', '1 day', mode => 'table');
SELECT pg_get_indexdef(c.oid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
WHERE i.indrelid IN ('tm.nokey'::regclass, 'tm.nokey_archive'::regclass)
  AND am.amname = 'archive_cluster_guard' ORDER BY 1;
SELECT status, rows_moved FROM archive_cluster_run('tm.nokey', force => true);
SELECT try($$INSERT INTO tm.nokey VALUES (now(), 3, 'k1')$$);
INSERT INTO tm.nokey VALUES (now(), 3, 'k2'), (now(), 4, NULL);
SELECT archive_cluster_unregister('tm.nokey') AS rows_back;

-- unregister: the rows back in the table, no child, no trigger or guard left
SELECT archive_cluster_unregister('tm."Orders"') AS rows_back;
SELECT count(*) FROM pg_inherits WHERE inhparent = 'tm."Orders"'::regclass;
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'tm."Orders"'::regclass;
SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'tm."Orders"'::regclass AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'archive_cluster_guard');
SELECT to_regclass('tm."Orders_archive"');
SELECT count(*) = count(DISTINCT id) AS ids_unique, count(*) FROM ONLY tm."Orders";
SELECT archive_cluster_unregister('tm.trig') AS rows_back;
RESET ROLE;
SELECT count(*) FROM archive_cluster_config WHERE relation::text LIKE 'tm.%';
DROP SCHEMA tm CASCADE;
