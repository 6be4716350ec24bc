-- Attacks on registered tables by roles that do not own them (issue 19), each
-- reproduced as the attacking role with SET ROLE (this test runs as a
-- superuser):
--   owner1  owns the tables (and registers them)
--   user1   has table or column privileges granted by owner1
--   user2   gets a privilege from user1 (grant chain)
--   evil    has no privilege on owner1's tables; owns schemas of its own
-- Items: a. SQL injection through a schema name in register, and names with
-- quotes, backslashes, semicolons, newlines, unicode and 55/56 bytes;
-- c. column privileges bypassed through an error detail; d. grant chains,
-- registered_by, statistics of unreadable tables, the run log's bound.
-- (b, a tier's columns swapped under the view: security_columns.sql.)
\set VERBOSITY default
SELECT coalesce(max(run_id), 0) AS sec_first_run FROM archive_cluster_run_log \gset
SELECT count(*) AS sec_first_config FROM archive_cluster_config \gset

CREATE ROLE owner1;
CREATE ROLE user1;
CREATE ROLE user2;
CREATE ROLE evil;
CREATE SCHEMA sec AUTHORIZATION owner1;
GRANT USAGE ON SCHEMA sec TO PUBLIC;

-- Runs a statement; returns 'ok' or the SQLSTATE, message and detail of its
-- error (the detail is what item c is about).
CREATE FUNCTION sec_err(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	st text;
	msg text;
	det text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
	RETURN st || ': ' || msg || CASE WHEN det <> '' THEN E'\nDETAIL: ' || det ELSE '' END;
END $$;

-----------------------------------------------------------------------------
-- a. SQL injection in archive_cluster_register.  evil names a schema so that
-- its name, pasted inside a string literal of the grant copy and the
-- foreign-key copy, ends the literal: the generated queries become
--   SELECT 'GRANT ' || x.privilege_type || ' ON "x' FROM ev.pwn() x, pg_attribute a
-- (the rest is commented out) and run ev.pwn() as the table's owner.  pwn()
-- records who ran it and returns no row, so that registering goes on.
-----------------------------------------------------------------------------
CREATE SCHEMA ev AUTHORIZATION evil;
CREATE SCHEMA "x' FROM ev.pwn() x, pg_attribute a --" AUTHORIZATION evil;
SET ROLE evil;
CREATE TABLE ev.calls (who name NOT NULL);
GRANT USAGE ON SCHEMA ev TO PUBLIC;
GRANT INSERT ON ev.calls TO PUBLIC;
CREATE FUNCTION ev.pwn() RETURNS TABLE (privilege_type text) LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ev.calls VALUES (current_user);
	RETURN;
END $$;
GRANT USAGE, CREATE ON SCHEMA "x' FROM ev.pwn() x, pg_attribute a --" TO owner1;
GRANT USAGE ON SCHEMA "x' FROM ev.pwn() x, pg_attribute a --" TO PUBLIC;
RESET ROLE;

-- owner1 creates a table in that schema: a grant to user1 (table and
-- column) so that the grant copy has rows, an outgoing foreign key so that
-- the foreign-key copy runs; and registers it
SET ROLE owner1;
CREATE TABLE sec.parent (cid int PRIMARY KEY);
INSERT INTO sec.parent SELECT generate_series(0, 9);
CREATE TABLE "x' FROM ev.pwn() x, pg_attribute a --".inj (
	id int PRIMARY KEY, cid int NOT NULL REFERENCES sec.parent, ts timestamp NOT NULL, v text);
INSERT INTO "x' FROM ev.pwn() x, pg_attribute a --".inj
SELECT g, g % 10, timestamp '2000-01-01' + g * interval '1 minute', 'v' || g FROM generate_series(1, 20) g;
GRANT SELECT ON "x' FROM ev.pwn() x, pg_attribute a --".inj TO user1;
GRANT UPDATE (v) ON "x' FROM ev.pwn() x, pg_attribute a --".inj TO user1;
SELECT archive_cluster_register('"x'' FROM ev.pwn() x, pg_attribute a --".inj', '{cid,ts}', 'ts');
RESET ROLE;

-- the planted function never ran: no row (the attack: owner1, once per
-- generated query)
SELECT who, count(*) AS calls FROM ev.calls GROUP BY who;
-- the view and both tables exist with the expected names
SELECT c.relname, c.relkind, pg_get_userbyid(c.relowner) AS owner
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'x'' FROM ev.pwn() x, pg_attribute a --' AND c.relkind IN ('r', 'v')
ORDER BY 1;
-- the grants were copied to the view and the archive (table and column)
SELECT relname,
	   has_table_privilege('user1', c.oid, 'SELECT') AS user1_select,
	   has_column_privilege('user1', c.oid, 'v', 'UPDATE') AS user1_update_v,
	   has_column_privilege('user1', c.oid, 'cid', 'UPDATE') AS user1_update_cid
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'x'' FROM ev.pwn() x, pg_attribute a --' AND c.relkind IN ('r', 'v')
ORDER BY 1;
-- the foreign key was copied to the archive
SELECT c.conname, r.relname, pg_get_constraintdef(c.oid) AS def
FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
JOIN pg_namespace n ON n.oid = r.relnamespace
WHERE n.nspname = 'x'' FROM ev.pwn() x, pg_attribute a --' AND c.contype = 'f'
ORDER BY 2, 1;
-- and the table works: rows through the view, a forced run, an update by
-- user1, unregistering with no row lost
SET ROLE owner1;
INSERT INTO "x' FROM ev.pwn() x, pg_attribute a --".inj VALUES (21, 1, '2000-01-02', 'v21');
SELECT status, rows_moved FROM archive_cluster_run('"x'' FROM ev.pwn() x, pg_attribute a --".inj', force => true);
SET ROLE user1;
UPDATE "x' FROM ev.pwn() x, pg_attribute a --".inj SET v = 'by user1' WHERE id = 3;
SET ROLE owner1;
SELECT count(*), sum(id), count(*) FILTER (WHERE v = 'by user1') AS updated
FROM "x' FROM ev.pwn() x, pg_attribute a --".inj;
SELECT archive_cluster_unregister('"x'' FROM ev.pwn() x, pg_attribute a --".inj') AS moved_back;
SELECT count(*), sum(id) FROM "x' FROM ev.pwn() x, pg_attribute a --".inj;
RESET ROLE;
SELECT count(*) AS pwn_calls FROM ev.calls;

-- Names with quotes, backslashes, semicolons, newlines and unicode, of
-- schemas, tables and columns, and table names of 55 bytes (<t>_current
-- and <t>_archive: 63 bytes) and 56 bytes (refused: 42622).
-- sec_roundtrip(schema, table, column prefix), run as owner1: creates the
-- table (id, key, ts and value columns named prefix || _id, _k, _ts, _v),
-- 10 old rows, grants to user1 (SELECT, UPDATE of the value column),
-- registers it, inserts 5 rows through the view, forces a run, updates an
-- archived row through the view, reads everything back, unregisters.  It
-- returns what it saw, or the step and error at which it stopped (its
-- objects are then rolled back).
CREATE FUNCTION sec_roundtrip(sch text, tbl text, col text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	t text := format('%I.%I', sch, tbl);
	idc text := col || '_id';
	kc text := col || '_k';
	tsc text := col || '_ts';
	vc text := col || '_v';
	at_step text := 'create';
	moved bigint;
	back bigint;
	n bigint;
	n_after bigint;
	s bigint;
	upd bigint;
	vals bool;
	priv text;
	st text;
	msg text;
BEGIN
	EXECUTE format('CREATE TABLE %s (%I int PRIMARY KEY, %I int NOT NULL, %I timestamp NOT NULL, %I text)',
				   t, idc, kc, tsc, vc);
	EXECUTE format('INSERT INTO %s SELECT g, g %% 3, timestamp ''2000-01-01'' + g * interval ''1 minute'', $1 || g'
				   ' FROM generate_series(1, 10) g', t) USING col;
	EXECUTE format('GRANT SELECT, UPDATE (%I) ON %s TO user1', vc, t);
	at_step := 'register';
	PERFORM archive_cluster_register(t::regclass, ARRAY[kc, tsc]::name[], tsc::name);
	at_step := 'insert';
	EXECUTE format('INSERT INTO %s SELECT g, g %% 3, timestamp ''2000-01-02'' + g * interval ''1 minute'', $1 || g'
				   ' FROM generate_series(11, 15) g', t) USING col;
	at_step := 'run';
	SELECT rows_moved INTO moved FROM archive_cluster_run(t::regclass, force => true);
	at_step := 'update';
	EXECUTE format('UPDATE %s SET %I = $1 WHERE %I = 3', t, vc, idc) USING col || ' updated';
	at_step := 'read';
	EXECUTE format('SELECT count(*), sum(%I), count(*) FILTER (WHERE %I = $1),'
				   ' bool_and(%I = $1 OR %I = $2 || %I) FROM %s',
				   idc, vc, vc, vc, idc, t) INTO n, s, upd, vals USING col || ' updated', col;
	priv := CASE WHEN has_table_privilege('user1', t, 'SELECT') AND has_column_privilege('user1', t, vc, 'UPDATE')
			THEN 'copied' ELSE 'missing' END;
	at_step := 'unregister';
	back := archive_cluster_unregister(t::regclass);
	at_step := 'after';
	EXECUTE format('SELECT count(*) FROM %s', t) INTO n_after;
	RETURN format('moved %s, read %s rows (id sum %s, updated %s, values %s), grants %s, moved back %s, %s rows after',
				  moved, n, s, upd, CASE WHEN vals THEN 'ok' ELSE 'WRONG' END, priv, back, n_after);
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
	RETURN at_step || ': ' || st || ': ' || msg;
END $$;

CREATE SCHEMA "sch'""\;
 é€" AUTHORIZATION owner1;
CREATE SCHEMA "sch""\;
 é€ 2" AUTHORIZATION owner1;
SET ROLE owner1;
SELECT label, octet_length(tbl) AS bytes, sec_roundtrip(sch, tbl, col) AS result
FROM (VALUES
	(1, 'single quote', 'sec', 'q''uote', 'c''ol'),
	(2, 'double quote', 'sec', 'd"quote', 'c"ol'),
	(3, 'backslash', 'sec', 'back\slash', 'c\ol'),
	(4, 'semicolon', 'sec', 'semi;colon; --', 'c;ol'),
	(5, 'newline', 'sec', E'new\nline', E'c\nol'),
	(6, 'unicode', 'sec', 'uni é€', 'é€'),
	(7, 'all but single quote', 'sec', E'a"\\;\n é€', E'c"\\;\n é€'),
	(8, 'all in one', 'sec', E'a''"\\;\n é€', E'c''"\\;\n é€'),
	(9, 'schema, no single quote', E'sch"\\;\n é€ 2', E't"\\;\n é€', 'c'),
	(9, 'schema', E'sch''"\\;\n é€', E't''"\\;\n é€', 'c'),
	(10, '55 bytes', 'sec', repeat('x', 55), repeat('y', 60)),
	(11, '55 bytes, all', 'sec', E'l''"\\;\né€' || repeat('x', 55 - octet_length(E'l''"\\;\né€')),
	 E'c''"\\;\né€' || repeat('y', 60 - octet_length(E'c''"\\;\né€'))),
	(12, '56 bytes', 'sec', repeat('z', 56), 'c')
) v(ord, label, sch, tbl, col)
ORDER BY ord;
RESET ROLE;
-----------------------------------------------------------------------------
-- c. Column privileges and error details.  user1 may read id and note and
-- update note; a CHECK violation through the view must not show user1 the
-- other columns (secret), no more than the plain table does.
-----------------------------------------------------------------------------
SET ROLE owner1;
CREATE TABLE sec.cp (id int PRIMARY KEY, note text NOT NULL, secret text NOT NULL, cid int NOT NULL,
					 ts timestamp NOT NULL, CHECK (note <> 'bad'));
INSERT INTO sec.cp VALUES (1, 'n1', 'SECRET-1', 1, '2000-01-01'), (2, 'n2', 'SECRET-2', 2, '2000-01-01'),
						  (3, 'n3', 'SECRET-3', 3, '2100-01-01');
CREATE TABLE sec.cp_plain (LIKE sec.cp INCLUDING ALL);
INSERT INTO sec.cp_plain SELECT * FROM sec.cp;
GRANT SELECT (id, note), UPDATE (note) ON sec.cp, sec.cp_plain TO user1;
SELECT archive_cluster_register('sec.cp', '{cid,ts}', 'ts');
RESET ROLE;
SET ROLE user1;
-- what PostgreSQL shows on the plain table: only the columns user1 may read
SELECT sec_err($$UPDATE sec.cp_plain SET note = 'bad' WHERE id = 1$$) AS plain_table;
-- through the view, a row in cp_current: the same, no secret
SELECT sec_err($$UPDATE sec.cp SET note = 'bad' WHERE id = 1$$) AS view_current_row;
SELECT sec_err($$UPDATE sec.cp SET note = 'bad' WHERE id = 1$$) NOT LIKE '%SECRET%' AS secret_hidden;
-- user1 still cannot read the column itself, and may still update note
SELECT sec_err($$SELECT secret FROM sec.cp$$) AS select_secret;
SELECT sec_err($$UPDATE sec.cp SET note = 'fine' WHERE id = 1$$) AS allowed_update;
RESET ROLE;
-- rows 1 and 2 move to the archive; row 3 stays (hot)
SET ROLE owner1;
SELECT status, rows_moved FROM archive_cluster_run('sec.cp', force => true);
RESET ROLE;
SET ROLE user1;
-- through the view, a row in cp_archive: no secret either
SELECT sec_err($$UPDATE sec.cp SET note = 'bad' WHERE id = 2$$) AS view_archived_row;
SELECT sec_err($$UPDATE sec.cp SET note = 'bad' WHERE id = 2$$) NOT LIKE '%SECRET%' AS secret_hidden;
SELECT sec_err($$UPDATE sec.cp SET note = 'fine too' WHERE id = 2$$) AS allowed_update;
RESET ROLE;
SELECT id, note, secret FROM sec.cp ORDER BY id;

-----------------------------------------------------------------------------
-- d (i). Grant chains: user1 holds SELECT WITH GRANT OPTION from owner1 and
-- granted SELECT to user2.  The grants copied to the view keep their
-- grantors (user2's grant: grantor user1), so that REVOKE ... CASCADE from
-- user1 on the view also takes user2's.
-----------------------------------------------------------------------------
SET ROLE owner1;
CREATE TABLE sec.gc (id int PRIMARY KEY, cid int NOT NULL, ts timestamp NOT NULL);
INSERT INTO sec.gc SELECT g, g % 10, timestamp '2000-01-01' + g * interval '1 minute' FROM generate_series(1, 20) g;
GRANT SELECT ON sec.gc TO user1 WITH GRANT OPTION;
SET ROLE user1;
GRANT SELECT ON sec.gc TO user2;
SET ROLE owner1;
SELECT archive_cluster_register('sec.gc', '{cid,ts}', 'ts');
RESET ROLE;
-- grantors on the view and the archive, right after registration
SELECT c.relname, x.grantor::regrole AS grantor, x.grantee::regrole AS grantee, x.privilege_type, x.is_grantable
FROM pg_class c, aclexplode(c.relacl) x
WHERE c.oid IN ('sec.gc'::regclass, 'sec.gc_archive'::regclass) AND x.grantee <> c.relowner
ORDER BY 1, 3, 2, 4;
SET ROLE owner1;
REVOKE SELECT ON sec.gc FROM user1 CASCADE;
RESET ROLE;
SELECT has_table_privilege('user1', 'sec.gc', 'SELECT') AS user1_select_view,
	   has_table_privilege('user2', 'sec.gc', 'SELECT') AS user2_select_view;

-----------------------------------------------------------------------------
-- d (ii). registered_by is the role that called archive_cluster_register
-- (owner1), not the extension's owner.
-----------------------------------------------------------------------------
SELECT relation, registered_by, registered_by = 'owner1' AS is_caller
FROM archive_cluster_tables WHERE relation IN ('sec.gc'::regclass, 'sec.cp'::regclass)
ORDER BY relation::text;

-----------------------------------------------------------------------------
-- d (iii). Statistics of a table (threshold, distinct keys, rows per page,
-- row estimates) are shown only to roles that may read it: owner1 and user2
-- (SELECT on the view) see them, evil does not (row hidden or NULLs).
-----------------------------------------------------------------------------
SET ROLE owner1;
CREATE TABLE sec.st (id int PRIMARY KEY, cid int NOT NULL, ts timestamp NOT NULL, pad text);
INSERT INTO sec.st SELECT g, g % 17, timestamp '2000-01-01' + g * interval '1 minute', repeat('p', 100)
FROM generate_series(1, 1000) g;
GRANT SELECT ON sec.st TO user2;
SELECT archive_cluster_register('sec.st', '{cid,ts}', 'ts');
ANALYZE sec.st_current, sec.st_archive;
RESET ROLE;
CREATE FUNCTION sec_stats_seen(OUT who name, OUT rows_seen bigint, OUT threshold bigint, OUT distinct_keys bigint,
							   OUT rows_per_page bigint, OUT current_rows bigint, OUT eligible_rows bigint,
							   OUT archive_rows bigint)
LANGUAGE sql AS $$
	SELECT current_user, count(*),
		   count(*) FILTER (WHERE threshold_rows IS NOT NULL),
		   count(*) FILTER (WHERE distinct_keys IS NOT NULL),
		   count(*) FILTER (WHERE rows_per_page IS NOT NULL),
		   count(*) FILTER (WHERE current_rows_estimate IS NOT NULL),
		   count(*) FILTER (WHERE eligible_rows_estimate IS NOT NULL),
		   count(*) FILTER (WHERE archive_rows_estimate IS NOT NULL)
	FROM archive_cluster_tables WHERE relation = 'sec.st'::regclass
$$;
SET ROLE owner1;
SELECT * FROM sec_stats_seen();
SET ROLE user2;
SELECT * FROM sec_stats_seen();
SET ROLE evil;
SELECT * FROM sec_stats_seen();
-- nor through the function under the view
SELECT distinct_keys IS NOT NULL AS distinct_keys, rows_per_page IS NOT NULL AS rows_per_page,
	   current_rows_estimate IS NOT NULL AS current_rows
FROM archive_cluster_table_state('sec.st');
RESET ROLE;

-----------------------------------------------------------------------------
-- d (iv). The run log is bounded: archive_cluster.run_log_max_rows rows per
-- table (a superuser's setting): five forced runs that each move rows leave
-- at most 3 of that table's rows in archive_cluster_runs.  owner1 cannot
-- change the setting.
-----------------------------------------------------------------------------
SET archive_cluster.run_log_max_rows = 3;
SET ROLE owner1;
SELECT sec_err($$SET archive_cluster.run_log_max_rows = 1000$$) AS owner_set;
CREATE TABLE sec.rl (id int PRIMARY KEY, cid int NOT NULL, ts timestamp NOT NULL);
SELECT archive_cluster_register('sec.rl', '{cid,ts}', 'ts');
INSERT INTO sec.rl VALUES (1, 1, '2000-01-01');
SELECT status, rows_moved FROM archive_cluster_run('sec.rl', force => true);
INSERT INTO sec.rl VALUES (2, 1, '2000-01-01');
SELECT status, rows_moved FROM archive_cluster_run('sec.rl', force => true);
INSERT INTO sec.rl VALUES (3, 1, '2000-01-01');
SELECT status, rows_moved FROM archive_cluster_run('sec.rl', force => true);
INSERT INTO sec.rl VALUES (4, 1, '2000-01-01');
SELECT status, rows_moved FROM archive_cluster_run('sec.rl', force => true);
INSERT INTO sec.rl VALUES (5, 1, '2000-01-01');
SELECT status, rows_moved FROM archive_cluster_run('sec.rl', force => true);
RESET ROLE;
SELECT count(*) AS logged_runs, count(*) <= 3 AS bounded, max(rows_moved) AS rows_per_run
FROM archive_cluster_runs WHERE relation = 'sec.rl'::regclass;
SELECT count(*) AS rows_kept FROM sec.rl;
RESET archive_cluster.run_log_max_rows;

-----------------------------------------------------------------------------
-- d (v). Row-level security on the tiers (docs/user-guide.md, Security):
-- the view reads its tables as its owner, so policies added to the tiers
-- apply to reads only once the view is a security-invoker view; then user2
-- sees only the rows the policies let it see, in both tiers.
-----------------------------------------------------------------------------
SET ROLE owner1;
CREATE TABLE sec.rls (id int PRIMARY KEY, cid int NOT NULL, ts timestamp NOT NULL, owner_name name NOT NULL);
INSERT INTO sec.rls SELECT g, g % 3, '2000-01-01', CASE WHEN g % 2 = 0 THEN 'user2' ELSE 'other' END
FROM generate_series(1, 10) g;
GRANT SELECT ON sec.rls TO user2;
SELECT archive_cluster_register('sec.rls', '{cid,ts}', 'ts');
SELECT rows_moved FROM archive_cluster_run('sec.rls', force => true);
INSERT INTO sec.rls VALUES (11, 1, '2100-01-01', 'other'), (12, 1, '2100-01-01', 'user2');
ALTER TABLE sec.rls_current ENABLE ROW LEVEL SECURITY;
ALTER TABLE sec.rls_archive ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON sec.rls_current FOR SELECT USING (owner_name = current_user);
CREATE POLICY mine ON sec.rls_archive FOR SELECT USING (owner_name = current_user);
SET ROLE user2;
SELECT count(*) AS rows_seen_default_view FROM sec.rls;
SET ROLE owner1;
ALTER VIEW sec.rls SET (security_invoker = true);
SET ROLE user2;
SELECT count(*) AS rows_seen_invoker_view, string_agg(id::text, ',' ORDER BY id) AS ids FROM sec.rls;
RESET ROLE;

-- clean up: every object of the four roles, their runs, the roles
DELETE FROM archive_cluster_run_log WHERE run_id > :sec_first_run;
DROP OWNED BY owner1, user1, user2, evil CASCADE;
DROP ROLE owner1, user1, user2, evil;
DROP FUNCTION sec_err(text), sec_roundtrip(text, text, text), sec_stats_seen();
SELECT count(*) = :sec_first_config AS config_as_before FROM archive_cluster_config;
