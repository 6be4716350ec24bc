-- Unregistering gives back one plain table with every row.
CREATE TEMP TABLE t_before_unregister AS SELECT checksum('t') AS sum, 't_current'::regclass::oid AS oid;
SELECT archive_cluster_unregister('t') AS rows_moved_back;
SELECT relkind, oid = (SELECT oid FROM t_before_unregister) AS same_oid FROM pg_class WHERE relname = 't';
SELECT checksum('t') = (SELECT sum FROM t_before_unregister) AS same_rows;
SELECT count(*) FROM pg_class WHERE relname IN ('t_current', 't_archive');
SELECT count(*) FROM archive_cluster_config WHERE relation::text = 't';
-- history stays
SELECT relation_name, count(*) > 0 AS has_runs FROM archive_cluster_runs WHERE relation_name = 'public.t' GROUP BY 1;
-- and the table can be registered again
SELECT archive_cluster_register('t', '{cid,ts}', 'ts');
SELECT archive_cluster_unregister('t') AS rows_moved_back;

SET ROLE ac_owner;
SELECT archive_cluster_unregister('app."Payments"') > 0 AS moved_back;
\d app."Payments"
SELECT regexp_replace(relacl::text, 'm/', '/', 'g') AS relacl FROM pg_class WHERE oid = 'app."Payments"'::regclass;
RESET ROLE;
SELECT archive_cluster_unregister('"Events"') AS moved_back;
SELECT "Seq", "Key", length(body), body_len FROM "Events" WHERE "Seq" IN (1, 51) ORDER BY 1;
INSERT INTO "Events" ("Key", body) VALUES ('k0', 'after') RETURNING "Seq";

-- An archive whose policies its owner (not a superuser, who bypasses them)
-- is subject to (FORCE ROW LEVEL SECURITY): unregistering fails rather than
-- copy back only the rows a policy shows and drop the others with the archive.
SET ROLE ac_owner;
CREATE TABLE rls (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
SELECT archive_cluster_register('rls', '{cid,ts}', 'ts', '1 hour');
INSERT INTO rls SELECT g, g % 3, now() - interval '1 day' FROM generate_series(1, 30) g;
SELECT rows_moved FROM archive_cluster_run('rls', force => true);
ALTER TABLE rls_archive ENABLE ROW LEVEL SECURITY;
ALTER TABLE rls_archive FORCE ROW LEVEL SECURITY;
CREATE POLICY part ON rls_archive USING (cid = 0);
SELECT try($$SELECT archive_cluster_unregister('rls')$$);
SELECT count(*) AS still_registered FROM archive_cluster_tables WHERE relation = 'rls'::regclass;
DROP POLICY part ON rls_archive;
ALTER TABLE rls_archive NO FORCE ROW LEVEL SECURITY;
ALTER TABLE rls_archive DISABLE ROW LEVEL SECURITY;
SELECT archive_cluster_unregister('rls') AS rows_moved_back;
SELECT count(*) FROM rls;
DROP TABLE rls;
RESET ROLE;
