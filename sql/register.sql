-- Registering converts the table in place: no row copied, OID kept.
CREATE SCHEMA app;
GRANT USAGE, CREATE ON SCHEMA app TO ac_owner;
GRANT USAGE ON SCHEMA app TO ac_reader, ac_other;
SET ROLE ac_owner;
CREATE TABLE app."Payments" (
	ts timestamp NOT NULL,
	id int PRIMARY KEY,
	cid int NOT NULL,
	pad varchar(200) NOT NULL DEFAULT 'none',
	amount numeric CHECK (amount >= 0)
);
CREATE INDEX "Payments_cid_ts" ON app."Payments" (cid, ts);
COMMENT ON COLUMN app."Payments".amount IS 'in cents';
INSERT INTO app."Payments"
SELECT timestamp '2020-01-01' + i * interval '1 minute', i, i % 100, repeat('p', i % 50), i
FROM generate_series(1, 10000) i;
GRANT SELECT ON app."Payments" TO ac_reader;
GRANT SELECT (id, cid), UPDATE (pad) ON app."Payments" TO ac_other;
ANALYZE app."Payments";
CREATE TEMP TABLE before AS
SELECT 'app."Payments"'::regclass::oid AS oid, checksum('app."Payments"') AS sum;
RESET ROLE;

SET ROLE ac_owner;
SELECT archive_cluster_register('app."Payments"', cluster_by => '{cid,ts}',
	age_column => 'ts', hot_window => '1 day');
RESET ROLE;

-- the original table, renamed, with its OID, rows, indexes and statistics
SELECT c.oid = b.oid AS same_oid, checksum('app."Payments_current"') = b.sum AS same_rows
FROM pg_class c, before b WHERE c.oid = 'app."Payments_current"'::regclass;
SELECT count(*) > 0 AS kept_statistics FROM pg_statistic
WHERE starelid = 'app."Payments_current"'::regclass;
SELECT indexrelid::regclass FROM pg_index
WHERE indrelid = 'app."Payments_current"'::regclass ORDER BY 1::text;

-- the archive: same columns, defaults, constraints, indexes; empty
\d app."Payments_archive"
SELECT count(*) FROM app."Payments_archive";

-- the view: same name, same column order, defaults, grants, trigger
\d+ app."Payments"
SELECT relowner::regrole, regexp_replace(relacl::text, 'm/', '/', 'g') AS relacl FROM pg_class WHERE oid = 'app."Payments"'::regclass;
SELECT attname, attacl FROM pg_attribute
WHERE attrelid = 'app."Payments"'::regclass AND attacl IS NOT NULL ORDER BY attnum;
SELECT regexp_replace(relacl::text, 'm/', '/', 'g') AS relacl FROM pg_class WHERE oid = 'app."Payments_archive"'::regclass;
SELECT checksum('app."Payments"') = (SELECT sum FROM before) AS view_same_rows;

-- configuration, and the threshold from the statistics: 100 keys x rows per page
SELECT relation, current_table, archive_table, cluster_by, age_column, hot_window,
	batch_rows, threshold_source, distinct_keys,
	threshold_rows = distinct_keys * rows_per_page AS seed_rule,
	current_rows_estimate, eligible_rows_estimate, archive_rows_estimate, runs
FROM archive_cluster_tables;

-- a reader can read through the view, but not register, run or unregister
SET ROLE ac_reader;
SELECT count(*) FROM app."Payments";
SELECT try($$SELECT * FROM archive_cluster_run('app."Payments"')$$);
SELECT try($$SELECT archive_cluster_unregister('app."Payments"')$$);
RESET ROLE;
