-- Row locks through a registered view (issue 15, item 7).  PostgreSQL
-- accepts SELECT ... FOR UPDATE / FOR NO KEY UPDATE / FOR SHARE / FOR KEY
-- SHARE on a view and pushes the lock down into the view's query; the
-- UNION ALL of a registered view has no FROM clause to take it, so the
-- statement used to succeed having locked no row (select_for_update() and
-- SKIP LOCKED job queues silently broken).  Every such lock is refused
-- (0A000) wherever it appears; locks on other tables and views, and on the
-- two tables themselves, work as before.
\set VERBOSITY default

-- SQLSTATE and message of a statement's error, or 'ok'
CREATE FUNCTION lock_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE ROLE rl_owner;
CREATE SCHEMA rl AUTHORIZATION rl_owner;
SET ROLE rl_owner;
CREATE TABLE rl.jobs (id int PRIMARY KEY, cid int NOT NULL, ts timestamp NOT NULL,
					  state text NOT NULL DEFAULT 'new');
INSERT INTO rl.jobs SELECT g, g % 3, timestamp '2000-01-01' + g * interval '1 hour', 'new'
FROM generate_series(1, 6) g;
SELECT archive_cluster_register('rl.jobs', '{cid,ts}', 'ts', hot_window => '1 hour');
SELECT status, rows_moved FROM archive_cluster_run('rl.jobs', force => true);
INSERT INTO rl.jobs VALUES (7, 1, '2100-01-01', 'new'), (8, 2, '2100-01-01', 'new');
SELECT 'current' AS tier, id FROM rl.jobs_current UNION ALL
SELECT 'archive', id FROM rl.jobs_archive ORDER BY 2;
CREATE TABLE rl.other (id int PRIMARY KEY, note text);
INSERT INTO rl.other VALUES (1, 'one'), (2, 'two'), (9, 'nine');
CREATE VIEW rl.other_v AS SELECT * FROM rl.other;

-- the whole error, once
SELECT id FROM rl.jobs WHERE id = 1 FOR UPDATE;
\echo :LAST_ERROR_SQLSTATE
-- a job queue's statement
SELECT id FROM rl.jobs WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;

-- every strength and wait policy, OF, joins, subqueries, WITH, sublinks,
-- EXPLAIN, CREATE TABLE AS: refused
SELECT label, lock_try(sql) FROM (VALUES
	(1, 'for update', $$SELECT * FROM rl.jobs FOR UPDATE$$),
	(2, 'for no key update', $$SELECT * FROM rl.jobs FOR NO KEY UPDATE$$),
	(3, 'for share', $$SELECT * FROM rl.jobs FOR SHARE$$),
	(4, 'for key share', $$SELECT * FROM rl.jobs FOR KEY SHARE$$),
	(5, 'nowait', $$SELECT * FROM rl.jobs WHERE id = 7 FOR UPDATE NOWAIT$$),
	(6, 'skip locked', $$SELECT * FROM rl.jobs FOR NO KEY UPDATE SKIP LOCKED$$),
	(7, 'of the view', $$SELECT * FROM rl.jobs j FOR UPDATE OF j$$),
	(8, 'join, of the view', $$SELECT j.id FROM rl.jobs j JOIN rl.other o USING (id) FOR UPDATE OF j$$),
	(9, 'join, of both', $$SELECT j.id FROM rl.jobs j JOIN rl.other o USING (id) FOR SHARE OF o, j$$),
	(10, 'join, no OF', $$SELECT j.id FROM rl.jobs j, rl.other o WHERE o.id = j.id FOR UPDATE$$),
	(11, 'two clauses', $$SELECT j.id FROM rl.jobs j JOIN rl.other o USING (id) FOR UPDATE OF o FOR KEY SHARE OF j$$),
	(12, 'in a subquery', $$SELECT * FROM (SELECT id FROM rl.jobs FOR UPDATE) s$$),
	(13, 'pushed into a subquery', $$SELECT * FROM (SELECT id FROM rl.jobs WHERE id > 2) s FOR UPDATE$$),
	(14, 'in a sublink', $$SELECT * FROM rl.other WHERE id IN (SELECT id FROM rl.jobs FOR UPDATE)$$),
	(15, 'in WITH', $$WITH j AS (SELECT id FROM rl.jobs FOR UPDATE) SELECT count(*) FROM j$$),
	(16, 'in a lateral subquery', $$SELECT * FROM rl.other o, LATERAL (SELECT id FROM rl.jobs j WHERE j.id = o.id FOR SHARE) s$$),
	(17, 'UPDATE ... WHERE IN locked', $$UPDATE rl.other SET note = 'x' WHERE id IN (SELECT id FROM rl.jobs WHERE id = 1 FOR UPDATE)$$),
	(18, 'UPDATE ... FROM a locked subquery', $$UPDATE rl.other o SET note = 'x' FROM (SELECT id FROM rl.jobs FOR UPDATE) j WHERE j.id = o.id$$),
	(19, 'INSERT ... SELECT locked', $$INSERT INTO rl.other SELECT id + 100 FROM rl.jobs FOR UPDATE$$),
	(20, 'EXPLAIN', $$EXPLAIN (COSTS OFF) SELECT * FROM rl.jobs FOR UPDATE$$),
	(21, 'CREATE TABLE AS', $$CREATE TEMP TABLE rl_copy AS SELECT * FROM rl.jobs FOR UPDATE$$),
	(22, 'unqualified name', $$SET LOCAL search_path = rl, public; SELECT * FROM jobs FOR UPDATE$$)
) v(n, label, sql) ORDER BY n;

-- a cursor, PREPARE: refused when declared or prepared
BEGIN;
DECLARE c CURSOR FOR SELECT * FROM rl.jobs FOR UPDATE;
ROLLBACK;
PREPARE p AS SELECT * FROM rl.jobs WHERE id = $1 FOR UPDATE;
EXECUTE p(1);

-- PL/pgSQL: a job queue taking the next job (SKIP LOCKED), and a loop
CREATE FUNCTION rl.next_job() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	j int;
BEGIN
	SELECT id INTO j FROM rl.jobs WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;
	UPDATE rl.jobs SET state = 'taken' WHERE id = j;
	RETURN j;
END $$;
SELECT rl.next_job();
CREATE FUNCTION rl.lock_all() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	r record;
	n int := 0;
BEGIN
	FOR r IN SELECT id FROM rl.jobs FOR SHARE LOOP
		n := n + 1;
	END LOOP;
	RETURN n;
END $$;
SELECT rl.lock_all();
SELECT count(*) FILTER (WHERE state <> 'new') AS taken FROM rl.jobs;

-- SQL functions: the body is checked when created; a body created without
-- that check and a BEGIN ATOMIC body (analysed once, when created) are
-- refused when they run, also when the planner inlines them
CREATE FUNCTION rl.lock_sql() RETURNS SETOF int LANGUAGE sql AS $$ SELECT id FROM rl.jobs FOR UPDATE $$;
SET check_function_bodies = off;
CREATE FUNCTION rl.lock_sql() RETURNS SETOF int LANGUAGE sql AS $$ SELECT id FROM rl.jobs FOR UPDATE $$;
RESET check_function_bodies;
SELECT lock_try($$SELECT rl.lock_sql()$$) AS sql_body;
CREATE FUNCTION rl.lock_atomic() RETURNS SETOF int LANGUAGE sql
BEGIN ATOMIC
	SELECT id FROM rl.jobs WHERE id > 0 FOR NO KEY UPDATE;
END;
SELECT lock_try($$SELECT rl.lock_atomic()$$) AS atomic_body;
SELECT lock_try($$SELECT * FROM rl.lock_atomic()$$) AS atomic_body_in_from;
CREATE FUNCTION rl.lock_inlined() RETURNS SETOF int LANGUAGE sql STABLE
BEGIN ATOMIC
	SELECT id FROM rl.jobs FOR UPDATE;
END;
SELECT lock_try($$SELECT * FROM rl.lock_inlined()$$) AS atomic_body_inlined;
-- a rule's action (analysed once, when created) is refused when it runs
CREATE RULE lock_jobs AS ON INSERT TO rl.other
	DO ALSO SELECT id FROM rl.jobs WHERE id = new.id FOR UPDATE;
SELECT lock_try($$INSERT INTO rl.other VALUES (3, 'three')$$) AS rule_action;
DROP RULE lock_jobs ON rl.other;

-- through other views: the lock is pushed down into the registered view
CREATE VIEW rl.new_jobs AS SELECT id, state FROM rl.jobs WHERE state = 'new';
CREATE VIEW rl.new_jobs_2 AS SELECT * FROM rl.new_jobs WHERE id > 1;
CREATE VIEW rl.jobs_notes AS SELECT j.id, o.note FROM rl.jobs j JOIN rl.other o USING (id);
CREATE VIEW rl.jobs_sub AS SELECT * FROM (SELECT id FROM rl.jobs) s;
SELECT * FROM rl.new_jobs FOR UPDATE;
SELECT label, lock_try(sql) FROM (VALUES
	(1, 'view over the view', $$SELECT * FROM rl.new_jobs FOR UPDATE SKIP LOCKED$$),
	(2, 'view over a view over it', $$SELECT * FROM rl.new_jobs_2 FOR SHARE$$),
	(3, 'view of a join with it', $$SELECT * FROM rl.jobs_notes FOR KEY SHARE$$),
	(4, 'view with it in a subquery', $$SELECT * FROM rl.jobs_sub FOR NO KEY UPDATE$$),
	(5, 'join of views, OF one', $$SELECT * FROM rl.other_v v JOIN rl.new_jobs n USING (id) FOR UPDATE OF n$$)
) v(n, label, sql) ORDER BY n;
-- a view that would lock through it is refused when created
CREATE VIEW rl.locking AS SELECT * FROM rl.jobs FOR UPDATE;

-- accepted: locks on the two tables (the hint's way), other tables and
-- views, a join locking only the other table, views over the registered
-- view without a lock, reads and writes through the view
SELECT label, lock_try(sql) FROM (VALUES
	(1, 'current table', $$SELECT * FROM rl.jobs_current FOR UPDATE$$),
	(2, 'archive table', $$SELECT * FROM rl.jobs_archive FOR UPDATE SKIP LOCKED$$),
	(3, 'other table', $$SELECT * FROM rl.other FOR SHARE NOWAIT$$),
	(4, 'other view', $$SELECT * FROM rl.other_v FOR UPDATE$$),
	(5, 'join, OF the other', $$SELECT j.id FROM rl.jobs j JOIN rl.other o USING (id) FOR UPDATE OF o$$),
	(6, 'join of views, OF the other', $$SELECT * FROM rl.other_v v JOIN rl.new_jobs n USING (id) FOR UPDATE OF v$$),
	(7, 'view over it, no lock', $$SELECT * FROM rl.new_jobs_2$$),
	(8, 'UPDATE ... FROM the view', $$UPDATE rl.other o SET note = note FROM rl.jobs j WHERE j.id = o.id$$),
	(9, 'DELETE ... USING the view', $$DELETE FROM rl.other o USING rl.jobs j WHERE j.id = o.id AND false$$),
	(10, 'sublink over the view, outer lock', $$SELECT * FROM rl.other WHERE id IN (SELECT id FROM rl.jobs) FOR UPDATE$$),
	(11, 'WITH over the view, outer lock', $$WITH j AS (SELECT id FROM rl.jobs) SELECT o.* FROM rl.other o JOIN j USING (id) FOR UPDATE OF o$$)
) v(n, label, sql) ORDER BY n;

-- which rows a join locking only the other table locked: those of rl.other
BEGIN;
SELECT j.id, o.note FROM rl.jobs j JOIN rl.other o USING (id) ORDER BY 1 FOR UPDATE OF o;
SELECT 'other' AS rel, id, xmax = pg_current_xact_id()::xid AS locked FROM rl.other
UNION ALL SELECT 'current', id, xmax = pg_current_xact_id()::xid FROM rl.jobs_current
UNION ALL SELECT 'archive', id, xmax = pg_current_xact_id()::xid FROM rl.jobs_archive ORDER BY 1, 2;
ROLLBACK;
-- locking in the tables themselves locks the rows
BEGIN;
SELECT id FROM rl.jobs_current WHERE id = 7 FOR UPDATE;
SELECT id FROM rl.jobs_archive WHERE id = 1 FOR UPDATE SKIP LOCKED;
SELECT 'current' AS rel, id, xmax = pg_current_xact_id()::xid AS locked FROM rl.jobs_current
UNION ALL SELECT 'archive', id, xmax = pg_current_xact_id()::xid FROM rl.jobs_archive ORDER BY 1, 2;
ROLLBACK;

-- reads and writes through the view
SELECT count(*), min(id), max(id) FROM rl.jobs;
SELECT id, state FROM rl.jobs WHERE id IN (1, 7) ORDER BY id;
UPDATE rl.jobs SET state = 'done' WHERE id IN (1, 7) RETURNING id, state;
DELETE FROM rl.jobs WHERE id = 8 RETURNING id;
INSERT INTO rl.jobs VALUES (10, 1, '2100-01-01') RETURNING id, state;
SELECT id, state FROM rl.jobs ORDER BY id;

-- a view with a look-alike trigger: a PL/pgSQL function of that name is not
-- the extension's; the extension's function on a view of one's own makes
-- that view refuse row locks (only that view)
CREATE FUNCTION rl.archive_cluster_view_trigger() RETURNS trigger LANGUAGE plpgsql
AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER look_alike INSTEAD OF UPDATE ON rl.other_v
	FOR EACH ROW EXECUTE FUNCTION rl.archive_cluster_view_trigger();
SELECT lock_try($$SELECT * FROM rl.other_v FOR UPDATE$$) AS look_alike;
DROP TRIGGER look_alike ON rl.other_v;
CREATE TRIGGER borrowed INSTEAD OF UPDATE ON rl.other_v
	FOR EACH ROW EXECUTE FUNCTION public.archive_cluster_view_trigger();
SELECT lock_try($$SELECT * FROM rl.other_v FOR UPDATE$$) AS borrowed;
SELECT lock_try($$SELECT * FROM rl.other FOR UPDATE$$) AS its_table;
DROP TRIGGER borrowed ON rl.other_v;
SELECT lock_try($$SELECT * FROM rl.other_v FOR UPDATE$$) AS dropped;

-- unregistered: a plain table again, locked as usual
DROP VIEW rl.new_jobs_2, rl.new_jobs, rl.jobs_notes, rl.jobs_sub;
DROP FUNCTION rl.lock_atomic(), rl.lock_inlined();
SELECT archive_cluster_unregister('rl.jobs');
SELECT lock_try($$SELECT * FROM rl.jobs FOR UPDATE$$) AS unregistered;
SELECT rl.next_job();
RESET ROLE;

DEALLOCATE ALL;
DROP FUNCTION lock_try(text);
DELETE FROM archive_cluster_run_log WHERE relation_name LIKE 'rl.%';
DROP OWNED BY rl_owner CASCADE;
DROP ROLE rl_owner;
