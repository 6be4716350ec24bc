-- Every requirement refused with a clear error: SQLSTATE, message, hint.
CREATE TABLE good (id int PRIMARY KEY, k int NOT NULL, ts timestamptz NOT NULL, maybe int, p point NOT NULL DEFAULT '(0,0)', n int);

-- arguments
SELECT try($$SELECT archive_cluster_register(NULL, '{k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', NULL, 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{k,NULL}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{k,k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{a,b,c,d,e,f,g,h,i}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{{k},{id}}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', NULL)$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'ts', NULL)$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'ts', '-1 hour')$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'ts', batch_rows => 0)$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'ts', batch_rows => 1000000000)$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'ts', lock_timeout => '0')$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'ts', lock_timeout => NULL)$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'ts', lock_retries => -1)$$);
SELECT try($$SELECT archive_cluster_register('nope', '{k}', 'ts')$$);

-- columns
SELECT try($$SELECT archive_cluster_register('good', '{nope}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{K}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'nope')$$);
SELECT try($$SELECT archive_cluster_register('good', '{maybe}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'n')$$);
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'k')$$);
SELECT try($$SELECT archive_cluster_register('good', '{p}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good', '{ctid}', 'ts')$$);

-- row identity
CREATE TABLE no_key (k int NOT NULL, ts timestamp NOT NULL);
SELECT try($$SELECT archive_cluster_register('no_key', '{k}', 'ts')$$);
CREATE TABLE nullable_key (id int UNIQUE, k int NOT NULL, ts timestamp NOT NULL);
SELECT try($$SELECT archive_cluster_register('nullable_key', '{k}', 'ts')$$);
CREATE TABLE partial_key (id int NOT NULL, k int NOT NULL, ts timestamp NOT NULL);
CREATE UNIQUE INDEX ON partial_key (id) WHERE k > 0;
SELECT try($$SELECT archive_cluster_register('partial_key', '{k}', 'ts')$$);
CREATE TABLE deferred_key (id int PRIMARY KEY DEFERRABLE, k int NOT NULL, ts timestamp NOT NULL);
SELECT try($$SELECT archive_cluster_register('deferred_key', '{k}', 'ts')$$);
-- a NOT NULL unique index is enough
CREATE TABLE unique_key (id int NOT NULL, k int NOT NULL, ts timestamp NOT NULL);
CREATE UNIQUE INDEX ON unique_key (id);
SELECT try($$SELECT archive_cluster_register('unique_key', '{k}', 'ts')$$);

-- kinds of relation
CREATE TABLE other (id int PRIMARY KEY);
CREATE VIEW a_view AS SELECT * FROM other;
CREATE MATERIALIZED VIEW a_matview AS SELECT * FROM other;
CREATE SEQUENCE a_seq;
SELECT try($$SELECT archive_cluster_register('a_view', '{k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('a_matview', '{k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('a_seq', '{k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('pg_class', '{oid}', 'ts')$$);
CREATE TABLE parted (id int, k int NOT NULL, ts timestamp NOT NULL, PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM ('2020-01-01') TO ('2030-01-01');
SELECT try($$SELECT archive_cluster_register('parted', '{k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('parted_1', '{k}', 'ts')$$);
CREATE TABLE parent (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
CREATE TABLE child (extra int) INHERITS (parent);
ALTER TABLE child ADD PRIMARY KEY (id);
SELECT try($$SELECT archive_cluster_register('parent', '{k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('child', '{k}', 'ts')$$);
CREATE TEMP TABLE a_temp (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
SELECT try($$SELECT archive_cluster_register('a_temp', '{k}', 'ts')$$);
CREATE UNLOGGED TABLE an_unlogged (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
SELECT try($$SELECT archive_cluster_register('an_unlogged', '{k}', 'ts')$$);
CREATE TYPE row_type AS (id int, k int, ts timestamp);
CREATE TABLE typed OF row_type (id PRIMARY KEY, k NOT NULL, ts NOT NULL);
SELECT try($$SELECT archive_cluster_register('typed', '{k}', 'ts')$$);

-- things a view cannot keep
CREATE TABLE referenced (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
CREATE TABLE referencing (id int PRIMARY KEY, ref int REFERENCES referenced);
SELECT try($$SELECT archive_cluster_register('referenced', '{k}', 'ts')$$);
CREATE TABLE viewed (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
CREATE VIEW viewed_v AS SELECT id FROM viewed;
SELECT try($$SELECT archive_cluster_register('viewed', '{k}', 'ts')$$);
CREATE TABLE in_function (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
CREATE FUNCTION count_in_function() RETURNS bigint LANGUAGE sql
BEGIN ATOMIC SELECT count(*) FROM in_function; END;
SELECT try($$SELECT archive_cluster_register('in_function', '{k}', 'ts')$$);
CREATE TABLE ruled (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
CREATE RULE no_delete AS ON DELETE TO ruled DO INSTEAD NOTHING;
SELECT try($$SELECT archive_cluster_register('ruled', '{k}', 'ts')$$);
CREATE TABLE secured (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
ALTER TABLE secured ENABLE ROW LEVEL SECURITY;
SELECT try($$SELECT archive_cluster_register('secured', '{k}', 'ts')$$);

-- names
CREATE TABLE taken (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
CREATE TABLE taken_archive (x int);
SELECT try($$SELECT archive_cluster_register('taken', '{k}', 'ts')$$);
CREATE TYPE taken2_current AS (x int);
CREATE TABLE taken2 (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
SELECT try($$SELECT archive_cluster_register('taken2', '{k}', 'ts')$$);
CREATE TABLE a_name_of_exactly_fifty_eight_bytes_xxxxxxxxxxxxxxxxxxxxxxx (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
SELECT try($$SELECT archive_cluster_register('a_name_of_exactly_fifty_eight_bytes_xxxxxxxxxxxxxxxxxxxxxxx', '{k}', 'ts')$$);

-- ownership
CREATE TABLE not_yours (id int PRIMARY KEY, k int NOT NULL, ts timestamp NOT NULL);
SET ROLE ac_other;
SELECT try($$SELECT archive_cluster_register('not_yours', '{k}', 'ts')$$);
RESET ROLE;

-- registered twice, or a part of a registered table
SELECT archive_cluster_register('good', '{k}', 'ts');
SELECT try($$SELECT archive_cluster_register('good', '{k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good_current', '{k}', 'ts')$$);
SELECT try($$SELECT archive_cluster_register('good_archive', '{k}', 'ts')$$);

-- runs and unregistering
SELECT try($$SELECT * FROM archive_cluster_run('not_yours')$$);
SELECT try($$SELECT * FROM archive_cluster_run('good_current')$$);
SELECT try($$SELECT * FROM archive_cluster_run('good', force => NULL)$$);
SELECT try($$SELECT * FROM archive_cluster_run('good', max_batches => 0)$$);
SET ROLE ac_other;
SELECT try($$SELECT * FROM archive_cluster_run('good')$$);
SELECT try($$SELECT archive_cluster_unregister('good')$$);
-- a run of everything skips tables the caller does not own
SELECT count(*) FROM archive_cluster_run();
RESET ROLE;
SELECT try($$SELECT archive_cluster_unregister(NULL)$$);
SELECT try($$SELECT archive_cluster_unregister('not_yours')$$);
SELECT try($$SELECT archive_cluster_unregister('good_archive')$$);
SELECT try($$SELECT archive_cluster_unregister('good', lock_timeout => '2 days')$$);
SELECT try($$SELECT * FROM archive_cluster_table_state('not_yours')$$);
-- a view that depends on the registered view blocks unregistering
CREATE VIEW good_v AS SELECT id FROM good;
SELECT try($$SELECT archive_cluster_unregister('good')$$);
DROP VIEW good_v;
SELECT archive_cluster_unregister('good');

-- the trigger function outside its trigger
SELECT try($$SELECT archive_cluster_view_trigger()$$);
CREATE TABLE trig_misuse (id int);
CREATE TRIGGER misuse BEFORE INSERT ON trig_misuse FOR EACH ROW EXECUTE FUNCTION archive_cluster_view_trigger();
SELECT try($$INSERT INTO trig_misuse VALUES (1)$$);
CREATE VIEW trig_view AS SELECT 1 AS id;
CREATE TRIGGER misuse INSTEAD OF INSERT ON trig_view FOR EACH ROW EXECUTE FUNCTION archive_cluster_view_trigger();
SELECT try($$INSERT INTO trig_view VALUES (1)$$);
