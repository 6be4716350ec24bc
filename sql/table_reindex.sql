-- Table mode after REINDEX INDEX CONCURRENTLY of a tier's unique index
-- (issue 38, 4), routine bloat maintenance: the rebuilt index gets an OID
-- after the guard's, so the executor makes its entries after the guard
-- sees the row, and the row is noted to be checked once complete.  Before,
-- every such row was then read again from the heap to be checked, for good
-- (inserts measured ~10% slower); now the guard keeps the row's key and,
-- once the row is complete, skips it as before when the key is beyond the
-- archive's.  Shown by the buffers a 1,000-row insert touches, before and
-- after the rebuild (each row read again would add 1,000); and a key inside
-- the archive's range is still refused.
SET client_min_messages = warning;
CREATE SCHEMA ri;
SET search_path = ri, public;

CREATE TABLE o (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				ts timestamp NOT NULL, cid int NOT NULL);
SELECT archive_cluster_register('ri.o', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', mode => 'table');
INSERT INTO o (ts, cid)
SELECT timestamp '2000-01-01' + g * interval '1 minute', g % 10 FROM generate_series(1, 100) g;
SELECT status, rows_moved FROM archive_cluster_run('ri.o', force => true);

-- the shared buffers a 1,000-row insert of new rows touches
CREATE FUNCTION insert_buffers() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE $q$EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
		INSERT INTO ri.o (ts, cid)
		SELECT timestamp '2100-01-01' + g * interval '1 s', g % 10 FROM generate_series(1, 1000) g$q$
	INTO plan;
	RETURN (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::bigint +
		   (plan -> 0 -> 'Plan' ->> 'Shared Read Blocks')::bigint;
END
$$;
CREATE TEMP TABLE buffers (phase text, n bigint);
INSERT INTO buffers SELECT 'first', insert_buffers();
INSERT INTO buffers SELECT 'before', insert_buffers();

-- the guard's OID, then the primary key's after its rebuild
CREATE FUNCTION pkey_after_guard() RETURNS boolean LANGUAGE sql AS $$
	SELECT (SELECT indexrelid FROM pg_index WHERE indrelid = 'ri.o'::regclass AND indisprimary) >
		   (SELECT i.indexrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			JOIN pg_am a ON a.oid = c.relam
			WHERE i.indrelid = 'ri.o'::regclass AND a.amname = 'archive_cluster_guard')
$$;
SELECT pkey_after_guard() AS pkey_after_guard;
RESET client_min_messages;
REINDEX INDEX CONCURRENTLY o_pkey;
SET client_min_messages = warning;
SELECT pkey_after_guard() AS pkey_after_guard;
INSERT INTO buffers SELECT 'after', insert_buffers();
SELECT (SELECT n FROM buffers WHERE phase = 'after') - (SELECT n FROM buffers WHERE phase = 'before') < 300
	AS rows_not_read_again;

-- still checked: an archived key, and a key inside the archive's range
INSERT INTO o (id, ts, cid) OVERRIDING SYSTEM VALUE VALUES (5, timestamp '2100-02-01', 1);
-- the same with the archive's primary key rebuilt too
REINDEX INDEX CONCURRENTLY o_archive_pkey;
INSERT INTO o (id, ts, cid) OVERRIDING SYSTEM VALUE VALUES (7, timestamp '2100-02-01', 1);
SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM o;

SELECT archive_cluster_unregister('ri.o');
DROP SCHEMA ri CASCADE;
