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
