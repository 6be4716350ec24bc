-- DML through the view, on rows in the current and in the archive table.
SET ROLE ac_owner;
-- recent rows stay in the current table: the hot window
INSERT INTO app."Payments" (ts, id, cid, pad, amount)
SELECT now() - i * interval '1 minute', 100000 + i, i % 100, 'hot', i
FROM generate_series(1, 100) i;
SELECT table_name, status, rows_moved, batches FROM archive_cluster_run('app."Payments"', force => true);
SELECT (SELECT count(*) FROM app."Payments_current") AS current_rows,
	   (SELECT count(*) FROM app."Payments_archive") AS archive_rows,
	   (SELECT min(ts) > now() - interval '1 day' FROM app."Payments_current") AS current_is_hot,
	   (SELECT max(ts) < now() - interval '1 day' FROM app."Payments_archive") AS archive_is_old;

-- INSERT, with defaults and RETURNING
INSERT INTO app."Payments" (ts, id, cid) VALUES (now(), 200001, 7) RETURNING id, cid, pad, amount;
INSERT INTO app."Payments" VALUES (now(), 200002, 8, 'given', 5) RETURNING id, pad;
SELECT tableoid::regclass, id, pad FROM app."Payments_current" WHERE id >= 200001 ORDER BY id;
-- constraints of the current table apply
INSERT INTO app."Payments" VALUES ('2030-01-01', 200003, 8, 'neg', -1);
INSERT INTO app."Payments" VALUES (now(), 200001, 8, 'dup', 1);

-- UPDATE of a current row and of an archived row, with RETURNING
UPDATE app."Payments" SET pad = 'changed' WHERE id IN (100001, 5) RETURNING id, pad;
SELECT 'current' AS tier, id, pad FROM app."Payments_current" WHERE id IN (100001, 5)
UNION ALL
SELECT 'archive', id, pad FROM app."Payments_archive" WHERE id IN (100001, 5) ORDER BY 2;
-- an update that changes the key
UPDATE app."Payments" SET id = 300005 WHERE id = 5 RETURNING id;
SELECT count(*) FROM app."Payments" WHERE id IN (5, 300005);
-- the identity key stays unique across the two tables
INSERT INTO app."Payments" VALUES ('2030-01-01', 6, 1, 'same id as an archived row', 1);
UPDATE app."Payments" SET id = 8 WHERE id = 100003;
UPDATE app."Payments" SET id = 100004 WHERE id = 9;
SELECT count(*) FROM app."Payments" WHERE id IN (6, 8, 9, 100003, 100004);
-- UPDATE of many rows at once, both tiers
UPDATE app."Payments" SET amount = amount + 1 WHERE cid = 3;
SELECT count(*), sum(amount) FROM app."Payments" WHERE cid = 3;
-- constraints of the archive table apply to archived rows
UPDATE app."Payments" SET amount = -5 WHERE id = 6;

-- DELETE from both tiers, with RETURNING
DELETE FROM app."Payments" WHERE id IN (100002, 7, 999999) RETURNING id;
SELECT count(*) FROM app."Payments" WHERE id IN (100002, 7);

-- COPY FROM into the view
COPY app."Payments" (ts, id, cid, pad, amount) FROM stdin;
2020-06-01 00:00:00	400001	1	copied	10
2020-06-01 00:00:01	400002	2	copied	20
\.
SELECT id, pad FROM app."Payments_current" WHERE id > 400000 ORDER BY id;
RESET ROLE;

-- Identity, generated and dropped columns, mixed case, text keys, timestamptz.
CREATE TABLE "Events" (
	"Seq" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	gone int,
	"Key" text NOT NULL,
	at timestamptz NOT NULL DEFAULT now(),
	body text,
	body_len int GENERATED ALWAYS AS (length(body)) STORED
);
ALTER TABLE "Events" DROP COLUMN gone;
INSERT INTO "Events" ("Key", at, body)
SELECT 'k' || (i % 5), timestamptz '2021-01-01 00:00+00' + i * interval '1 hour',
	   CASE WHEN i = 1 THEN repeat('big', 5000) ELSE 'b' || i END
FROM generate_series(1, 50) i;
SELECT archive_cluster_register('"Events"', '{Key,at}', 'at', '1 hour', batch_rows => 10);
SELECT table_name, status, rows_moved FROM archive_cluster_run('"Events"', force => true);
-- TOASTed values survive the move
SELECT "Seq", "Key", length(body), body_len FROM "Events" WHERE "Seq" = 1;
SELECT count(*) FROM "Events_archive";
-- archived rows are in cluster order: by "Key", then at
SELECT "Key", count(*) FROM (
	SELECT "Key", lag("Key") OVER (ORDER BY ctid) AS prev FROM "Events_archive") s
WHERE prev IS DISTINCT FROM "Key" GROUP BY 1 ORDER BY 1;
-- identity default through the view; generated column computed, returned
INSERT INTO "Events" ("Key", body) VALUES ('k9', 'hello') RETURNING "Seq", "Key", body, body_len;
UPDATE "Events" SET body = 'longer body' WHERE "Seq" = 2 RETURNING "Seq", body, body_len;
UPDATE "Events" SET body = 'x' WHERE "Seq" = 51 RETURNING "Seq", body, body_len;
-- an ALWAYS identity column cannot be changed through the view either
UPDATE "Events" SET "Seq" = 1000 WHERE "Seq" = 3;

-- INSERTs through the view are written in batches (1000 rows, and at the end of each statement)
CREATE TABLE bt (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, note text CHECK (note <> 'bad'));
SELECT archive_cluster_register('bt', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
INSERT INTO bt SELECT g, g % 7, now(), 'n' FROM generate_series(1, 2500) g;
SELECT count(*), sum(id) FROM bt;
INSERT INTO bt VALUES (2501, 1, now(), 'r'), (2502, 2, now(), 'r') RETURNING id, cid, note;
-- a failing statement leaves none of its rows, before or after a batch boundary
SELECT try($$INSERT INTO bt SELECT 3000 + g, 1, now(), CASE WHEN g = 1500 THEN 'bad' ELSE 'n' END FROM generate_series(1, 2000) g$$);
SELECT try($$INSERT INTO bt SELECT 4000 + g, 1, now(), 'n' FROM generate_series(1, 10) g UNION ALL SELECT 1, 1, now(), 'dup'$$);
SELECT count(*) FROM bt;
-- the key stays unique across tiers
SELECT rows_moved FROM archive_cluster_run('bt', force => true) WHERE false;
UPDATE archive_cluster_config SET hot_window = '0' WHERE relation = 'bt'::regclass;
SELECT rows_moved FROM archive_cluster_run('bt', force => true);
UPDATE archive_cluster_config SET hot_window = '1 hour' WHERE relation = 'bt'::regclass;
SELECT try($$INSERT INTO bt VALUES (7000, 1, now(), 'n'), (5, 1, now(), 'in the archive')$$);
SELECT try($$INSERT INTO bt VALUES (7000, 1, now(), 'n'), (7000, 1, now(), 'twice')$$);
COPY bt FROM STDIN;
8001	1	2030-01-01 00:00:00+00	copied
8002	2	2030-01-01 00:00:00+00	copied
\.
SELECT count(*) FROM bt WHERE note = 'copied';
-- a subtransaction that fails inside a statement drops only its own rows
CREATE FUNCTION bt_maybe(i int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		INSERT INTO bt VALUES (9000 + i, 1, now(), CASE WHEN i % 2 = 0 THEN 'bad' ELSE 'inner' END);
	EXCEPTION WHEN check_violation THEN
		NULL;
	END;
	RETURN i;
END $$;
INSERT INTO bt SELECT 9500 + bt_maybe(g), 1, now(), 'outer' FROM generate_series(1, 6) g;
SELECT note, count(*) FROM bt WHERE id >= 9000 GROUP BY note ORDER BY note;
-- rolled back: gone
BEGIN;
INSERT INTO bt SELECT 10000 + g, 1, now(), 'rolled back' FROM generate_series(1, 1500) g;
ROLLBACK;
SELECT count(*) FROM bt WHERE id > 10000;
SELECT (SELECT count(*) FROM bt_current) + (SELECT count(*) FROM bt_archive) = (SELECT count(*) FROM bt) AS consistent;
DELETE FROM archive_cluster_run_log WHERE relation = 'bt'::regclass;
SELECT archive_cluster_unregister('bt') AS moved_back;
DROP TABLE bt;
DROP FUNCTION bt_maybe(int);
