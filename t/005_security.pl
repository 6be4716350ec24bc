# Security.
# 1. A role that does not own a table cannot register, run or unregister it
#    (42501), and a run of every table skips it.
# 2. Objects planted by another role are never called by the extension:
#    operators (=, <, <>, *= ...) and functions named like the ones the
#    extension's SQL uses (now, quote_ident, pg_get_expr, nextval, ...) in
#    public, with search_path = public, pg_catalog for the victims (the table
#    owner, a writer, the superuser, the background worker's database); and
#    tables named like the extension's own (archive_cluster_config,
#    <t>_current, ...) in pg_temp of the session that registers, writes
#    and runs.  Every planted object records its call in a table anybody can
#    write and raises a NOTICE: the table stays empty.
# 3. The role a run really executes as, observed by a CHECK constraint of
#    <t>_archive that calls a function recording current_user and
#    search_path (runs check the archive's constraints; they fire no user
#    triggers): the table's owner, with search_path pg_catalog, pg_temp, for
#    a manual run by a superuser and for the background worker; DML through
#    the view runs as the user who issues it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'security',
	'archive_cluster.enabled' => 'off',
	'archive_cluster.naptime' => 1,
	max_worker_processes => 16);

# The test's own queries look in pg_catalog first: only the extension's SQL
# is under test.
sub catalog_first
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', "SET search_path = pg_catalog, public; $sql");
}

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION archive_cluster;
CREATE ROLE alice LOGIN;      -- owns the tables
CREATE ROLE bob LOGIN;        -- writes through alice's view
CREATE ROLE mallory LOGIN;    -- plants objects
GRANT CREATE ON SCHEMA public TO alice, mallory;
-- the victims look in public first
ALTER ROLE alice SET search_path = public, pg_catalog;
ALTER ROLE bob SET search_path = public, pg_catalog;
ALTER DATABASE postgres SET search_path = public, pg_catalog;

CREATE TABLE public.called (fn text, by_role name, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT, SELECT ON public.called TO PUBLIC;
CREATE TABLE public.observed (what text, current_role_name name, search_path text);
GRANT INSERT, SELECT ON public.observed TO PUBLIC;
});

# --- mallory's traps in public
$node->safe_psql(
	'postgres', q{
SET ROLE mallory;
CREATE FUNCTION public.spy(fn text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.called (fn, by_role) VALUES (fn, current_user);
	RAISE NOTICE 'planted % called by %', fn, current_user;
END $$;
-- operators that shadow the built-in ones for exact argument types
CREATE FUNCTION public.trap_int4_eq(a int4, b int4) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('= int4'); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR public.= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = public.trap_int4_eq);
CREATE FUNCTION public.trap_int4_lt(a int4, b int4) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('< int4'); RETURN a OPERATOR(pg_catalog.<) b; END $$;
CREATE OPERATOR public.< (LEFTARG = int4, RIGHTARG = int4, FUNCTION = public.trap_int4_lt);
CREATE FUNCTION public.trap_int4_ne(a int4, b int4) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('<> int4'); RETURN a OPERATOR(pg_catalog.<>) b; END $$;
CREATE OPERATOR public.<> (LEFTARG = int4, RIGHTARG = int4, FUNCTION = public.trap_int4_ne);
CREATE FUNCTION public.trap_int8_eq(a int8, b int8) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('= int8'); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR public.= (LEFTARG = int8, RIGHTARG = int8, FUNCTION = public.trap_int8_eq);
CREATE FUNCTION public.trap_text_eq(a text, b text) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('= text'); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.trap_text_eq);
CREATE FUNCTION public.trap_text_cat(a text, b text) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('|| text'); RETURN a OPERATOR(pg_catalog.||) b; END $$;
CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = public.trap_text_cat);
CREATE FUNCTION public.trap_name_eq(a name, b name) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('= name'); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR public.= (LEFTARG = name, RIGHTARG = name, FUNCTION = public.trap_name_eq);
CREATE FUNCTION public.trap_oid_eq(a oid, b oid) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('= oid'); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = public.trap_oid_eq);
CREATE FUNCTION public.trap_ts_lt(a timestamptz, b timestamptz) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('< timestamptz'); RETURN a OPERATOR(pg_catalog.<) b; END $$;
CREATE OPERATOR public.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.trap_ts_lt);
CREATE FUNCTION public.trap_rec_eq(a record, b record) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('*= record'); RETURN true; END $$;
CREATE OPERATOR public.*= (LEFTARG = record, RIGHTARG = record, FUNCTION = public.trap_rec_eq);
-- functions named like the ones in the extension's generated SQL
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('now'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION public.quote_ident(text) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('quote_ident'); RETURN pg_catalog.quote_ident($1); END $$;
CREATE FUNCTION public.quote_literal(text) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('quote_literal'); RETURN pg_catalog.quote_literal($1); END $$;
CREATE FUNCTION public.pg_get_expr(pg_node_tree, oid) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('pg_get_expr'); RETURN pg_catalog.pg_get_expr($1, $2); END $$;
CREATE FUNCTION public.pg_get_constraintdef(oid) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('pg_get_constraintdef'); RETURN pg_catalog.pg_get_constraintdef($1); END $$;
CREATE FUNCTION public.pg_get_serial_sequence(text, text) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('pg_get_serial_sequence'); RETURN pg_catalog.pg_get_serial_sequence($1, $2); END $$;
CREATE FUNCTION public.nextval(regclass) RETURNS bigint LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('nextval'); RETURN pg_catalog.nextval($1); END $$;
CREATE FUNCTION public.current_setting(text) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('current_setting'); RETURN pg_catalog.current_setting($1); END $$;
CREATE FUNCTION public.format_type(oid, int4) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('format_type'); RETURN pg_catalog.format_type($1, $2); END $$;
CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('lower'); RETURN pg_catalog.lower($1); END $$;
CREATE FUNCTION public.has_table_privilege(oid, text) RETURNS bool LANGUAGE plpgsql AS
	$$ BEGIN PERFORM public.spy('has_table_privilege'); RETURN pg_catalog.has_table_privilege($1, $2); END $$;
});
my $traps = catalog_first(
	"SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND proowner = 'mallory'::regrole");
ok($traps >= 20, "mallory planted $traps functions and operators in public");
# sanity: a query that looks in public first does call them
$node->safe_psql('postgres', 'SELECT 1 = 1');
is(catalog_first('SELECT count(*) > 0 FROM called'),
	't', 'the traps work for unqualified SQL with public first');
catalog_first('TRUNCATE called');

# --- alice's tables; bob writes
$node->safe_psql(
	'postgres', q{
SET ROLE alice;
CREATE FUNCTION public.observe(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.observed VALUES (what, pg_catalog.current_user(), pg_catalog.current_setting('search_path'));
	RETURN true;
END $$;
-- (defaults qualified: alice's own search_path has public first)
CREATE TABLE pay (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, cid int NOT NULL,
				  ts timestamptz NOT NULL DEFAULT pg_catalog.now() OPERATOR(pg_catalog.-) interval '2 days',
				  note text DEFAULT pg_catalog.lower('X'));
CREATE INDEX ON pay (cid, ts);
INSERT INTO pay (cid) SELECT g OPERATOR(pg_catalog.%) 10 FROM generate_series(1, 3000) g;
GRANT SELECT, INSERT, UPDATE, DELETE ON pay TO bob;
-- through the view the identity default is nextval(), which checks USAGE on
-- the sequence (the plain table did not need it: see sql/view_privileges.sql)
GRANT USAGE ON SEQUENCE pay_id_seq TO bob;
CREATE TABLE wk (id bigint PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
INSERT INTO wk SELECT g, g OPERATOR(pg_catalog.%) 10, pg_catalog.now() OPERATOR(pg_catalog.-) interval '2 days'
FROM generate_series(1, 3000) g;
});

# --- 1. non-owners are refused
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET ROLE mallory; SELECT archive_cluster_register('pay', '{cid,ts}', 'ts')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:  42501: must be owner of table pay/, "mallory cannot register alice's table (42501)");
}
# registering as the superuser, with public first in search_path: the DDL
# runs as alice
$node->safe_psql('postgres',
	"SELECT archive_cluster_register('pay', '{cid,ts}', 'ts', hot_window => '1 hour', batch_rows => 100000)");
$node->safe_psql('postgres',
	"SET ROLE alice; SELECT archive_cluster_register('wk', '{cid,ts}', 'ts', hot_window => '1 hour', batch_rows => 1000)");
is( catalog_first(
		"SELECT string_agg(relname || ':' || relowner::regrole, ' ' ORDER BY relname) FROM pg_class WHERE relname IN ('pay', 'pay_current', 'pay_archive')"
	),
	'pay:alice pay_archive:alice pay_current:alice',
	'registered by a superuser: the view and both tables belong to alice');
foreach my $case (
	[ "SELECT * FROM archive_cluster_run('pay', force => true)", 'run' ],
	[ "SELECT archive_cluster_unregister('pay')", 'unregister' ],
	[ "SELECT * FROM archive_cluster_table_state('pay')", 'table_state' ])
{
	my ($sql, $what) = @$case;
	my ($ret, $out, $err) = $node->psql('postgres', "SET ROLE mallory; $sql",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	if ($what eq 'table_state')
	{
		# readable by everyone, like the archive_cluster_tables view
		is($ret, 0, 'mallory can read the state of the table (archive_cluster_tables is public)');
	}
	else
	{
		like($err, qr/ERROR:  42501: must be owner of table pay/, "mallory cannot $what alice's table (42501)");
	}
}
is( $node->safe_psql('postgres',
		'SET ROLE mallory; SELECT count(*) FROM archive_cluster_run(force => true)'),
	'0', 'a run of every table by mallory skips the tables she does not own');
my ($ret, $out, $err) = $node->psql('postgres', 'SET ROLE mallory; UPDATE pay SET note = \'x\' WHERE id OPERATOR(pg_catalog.=) 1',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  42501: permission denied for view pay/, 'mallory cannot write through the view');

# --- the archive's and current's constraints observe who writes
$node->safe_psql(
	'postgres', q{
SET ROLE alice;
ALTER TABLE pay_archive ADD CONSTRAINT observed CHECK (public.observe('pay archive'));
ALTER TABLE wk_archive ADD CONSTRAINT observed CHECK (public.observe('wk archive'));
ALTER TABLE pay_current ADD CONSTRAINT observed CHECK (public.observe('pay current'));
});

# --- 2. everything the extension does, by each victim, with the traps set
# bob writes through the view (INSERT with identity and defaults, COPY,
# UPDATE of a key and a non-key column, DELETE), in both tiers
$node->safe_psql(
	'postgres', q{
SET ROLE bob;
-- (bob's own SQL qualifies what it calls: only the extension is under test)
INSERT INTO pay (cid, ts) VALUES (1, pg_catalog.now() OPERATOR(pg_catalog.-) interval '3 days'), (2, pg_catalog.now());
INSERT INTO pay (cid) SELECT g FROM generate_series(1, 1500) g;
UPDATE pay SET note = 'bob' WHERE id OPERATOR(pg_catalog.=) ANY ('{1,2,3}');
});
# the superuser runs it by hand; bob then changes archived rows too
$node->safe_psql('postgres', "SELECT * FROM archive_cluster_run('pay', force => true)");
$node->safe_psql(
	'postgres', q{
SET ROLE bob;
UPDATE pay SET note = 'bob again', cid = cid OPERATOR(pg_catalog.+) 1 WHERE id OPERATOR(pg_catalog.=) ANY ('{1,2,4}');
UPDATE pay SET id = 100000 WHERE id OPERATOR(pg_catalog.=) 5;
DELETE FROM pay WHERE id OPERATOR(pg_catalog.=) ANY ('{6,4502}');
});
$node->safe_psql('postgres',
	"COPY pay (cid, ts) FROM PROGRAM 'printf \"3,2000-01-01 00:00:00+00\\n4,2000-01-02 00:00:00+00\\n\"' WITH (FORMAT csv)"
);

# mallory's own table, with tables named like the extension's in her pg_temp
# and pg_temp searched first: register, write, run, read, unregister
$node->safe_psql(
	'postgres', q{
SET ROLE mallory;
SET search_path = pg_temp, public, pg_catalog;
CREATE TABLE public.m (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
INSERT INTO public.m SELECT g, g OPERATOR(pg_catalog.%) 3, pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 day'
FROM generate_series(1, 100) g;
SELECT public.archive_cluster_register('public.m', '{cid,ts}', 'ts', batch_rows => 10);
INSERT INTO public.m VALUES (101, 1, pg_catalog.now() OPERATOR(pg_catalog.-) interval '1 day');
UPDATE public.m SET cid = 2 WHERE id OPERATOR(pg_catalog.=) ANY ('{1,101}');
SELECT * FROM public.archive_cluster_run('public.m', force => true);
UPDATE public.m SET cid = 0 WHERE id OPERATOR(pg_catalog.=) 2;
DELETE FROM public.m WHERE id OPERATOR(pg_catalog.=) 3;
SELECT count(*) FROM public.archive_cluster_tables;
SELECT count(*) FROM public.archive_cluster_runs;
SELECT public.archive_cluster_unregister('public.m');
});
is( $node->safe_psql(
		'postgres', q{
SET ROLE mallory;
SET search_path = pg_temp, public, pg_catalog;
CREATE TEMP TABLE archive_cluster_config (relation regclass, current_table regclass, archive_table regclass,
	cluster_by name[], age_column name, hot_window interval, batch_rows bigint, registered_at timestamptz, registered_by name);
CREATE TEMP TABLE archive_cluster_run_log (run_id bigint, relation regclass, relation_name text, started_at timestamptz,
	finished_at timestamptz, rows_moved bigint, batches int, started_by text, run_as name, error text);
CREATE TEMP TABLE m_current (id int, cid int, ts timestamptz);
CREATE TEMP TABLE m_archive (id int, cid int, ts timestamptz);
SELECT public.archive_cluster_register('public.m', '{cid,ts}', 'ts', batch_rows => 10);
SELECT rows_moved FROM public.archive_cluster_run('public.m', force => true);
UPDATE public.m SET cid = 1 WHERE id OPERATOR(pg_catalog.=) 50;
SELECT count(*) FROM pg_temp.archive_cluster_config;
SELECT count(*) FROM pg_temp.archive_cluster_run_log;
SELECT count(*) FROM pg_temp.m_current;
SELECT count(*) FROM pg_temp.m_archive;
SELECT count(*) FROM public.archive_cluster_config WHERE relation OPERATOR(pg_catalog.=) 'public.m'::regclass;
SELECT public.archive_cluster_unregister('public.m');
}),
	"\n100\n0\n0\n0\n0\n1\n100",
	"tables in mallory's pg_temp named like the extension's stay untouched");
is(catalog_first('SELECT count(*) FROM m'),
	'100', "mallory's table: 100 rows after register, DML, run and unregister");

# the background worker, in a database whose search_path puts public first
reload_with($node, 'archive_cluster.enabled' => 'on');
ok($node->poll_query_until('postgres', 'SELECT count(*) OPERATOR(pg_catalog.=) 3000 FROM wk_archive'),
	'the background worker archived alice\'s table wk');
reload_with($node, 'archive_cluster.enabled' => 'off');
# statistics and the views, read by the superuser and by alice
$node->safe_psql(
	'postgres', q{
SELECT count(*) FROM archive_cluster_tables;
SELECT count(*) FROM archive_cluster_fragmentation;
SELECT count(*) FROM archive_cluster_buffers;
SELECT count(*) FROM archive_cluster_fragmentation('pay');
SET ROLE alice;
SELECT count(*) FROM archive_cluster_tables;
SELECT count(*) FROM archive_cluster_runs;
});
# and unregistering, by alice
is($node->safe_psql('postgres', "SET ROLE alice; SELECT archive_cluster_unregister('pay') > 0"),
	't', 'alice unregisters pay');

is(catalog_first("SELECT coalesce(string_agg(DISTINCT fn || ' by ' || by_role, ', '), 'none') FROM called"),
	'none', 'no planted function or operator was ever called');

# --- 3. who the rows were written as
is( catalog_first(
		"SELECT string_agg(DISTINCT current_role_name || ' / ' || search_path, '; ') FROM observed WHERE what = 'wk archive'"
	),
	'alice / pg_catalog, pg_temp',
	'the worker moved rows as the table owner, with search_path pg_catalog, pg_temp');
is( catalog_first(
		"SELECT string_agg(DISTINCT current_role_name || ' / ' || search_path, '; ') FROM observed WHERE what = 'pay archive' AND current_role_name <> 'bob'"
	),
	'alice / pg_catalog, pg_temp',
	'a manual run by the superuser moved rows as the table owner');
is( catalog_first(
		"SELECT count(*) FROM observed WHERE what LIKE '%archive' AND current_role_name NOT IN ('alice', 'bob')"),
	'0',
	'no archived row was ever written as the superuser on the owner\'s behalf (nor as mallory)');
is( catalog_first(
		"SELECT count(*) > 0 FROM observed WHERE what = 'pay current' AND current_role_name = 'bob'"),
	't',
	'DML through the view runs as the user who issues it (bob)');
is( catalog_first(
		"SELECT count(*) > 0 FROM observed WHERE what = 'pay archive' AND current_role_name = 'bob'"),
	't',
	"bob's updates of archived rows run as bob");
is( catalog_first(
		"SELECT started_by || ' ' || run_as FROM archive_cluster_runs WHERE relation_name = 'public.wk'"),
	'worker alice',
	'archive_cluster_runs: the worker ran wk as alice');

$node->stop;
done_testing();
