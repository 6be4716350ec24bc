# The background workers: a launcher and a pool of short-lived workers,
# archiving registered tables with nobody calling anything; configuration
# reloads, a worker killed in the middle of a run, DROP EXTENSION / DROP
# DATABASE, a hot standby.  (The pool's bounds with many databases:
# t/009_worker_pool.pl.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'primary',
	init => { allows_streaming => 1 },
	'archive_cluster.naptime' => 1,
	max_worker_processes => 16,
	autovacuum => 'off',
	restart_after_crash => 'on');

# A registered table of $rows rows older than its hot window (due at 20,000).
sub make_table
{
	my ($db, $name, $rows) = @_;
	register_table($node, $db, $name,
		columns => 'pad text',
		rows => "SELECT g, g % 500, now() - interval '3 hours' - g * interval '1 ms', repeat('x', g % 100)
FROM generate_series(1, $rows) g",
		batch_rows => 20000);
}

# count:checksum of a registered table (through its view), and the rows in both tiers
sub state_of
{
	my ($db, $name) = @_;
	return tier_state($node, $db, $name, with => ['in_both']);
}

sub archived
{
	my ($db, $name, $rows) = @_;
	return wait_archived($node, $db, $name, $rows);
}

sub worker_count
{
	my ($db) = @_;
	return "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'archive_cluster worker' AND datname = '$db'";
}

# --- the launcher starts with the server
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'archive_cluster launcher'"),
	'launcher runs with the library preloaded');

# --- a database created after start-up gets a worker once the extension is
# there; "mon" watches the pool (archive_cluster_databases) from outside "app"
$node->safe_psql('postgres', 'CREATE DATABASE mon');
$node->safe_psql('mon', 'CREATE EXTENSION archive_cluster');
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('app', 'CREATE EXTENSION archive_cluster');
ok( $node->poll_query_until(
		'mon',
		"SELECT extension = 'installed' AND worker_starts >= 1 AND last_worker_end IS NOT NULL FROM archive_cluster_databases WHERE datname = 'app'"
	),
	'a new database gets a worker after CREATE EXTENSION, which looks and exits');

# --- it archives a due table with no manual call
make_table('app', 'pay', 60000);
my $before = state_of('app', 'pay');
ok(archived('app', 'pay', 60000), '60,000 rows archived by the worker');
is(state_of('app', 'pay'), $before, 'same rows after the worker run, none in both tiers');
is( $node->safe_psql(
		'app',
		"SELECT started_by || ' ' || rows_moved || ' ' || coalesce(error, 'no error') FROM archive_cluster_runs WHERE relation = 'pay'::regclass"
	),
	'worker 60000 no error',
	'the run is in archive_cluster_runs as started by the worker');
ok($node->log_contains(qr/archive_cluster: archived 60000 rows of "pay" in 1 batch, [0-9.]+ s \([0-9]+ rows\/s\)/),
	'one LOG line for the run');
# (vacuum_count only: whether that VACUUM could remove the moved rows' old
# versions depends on snapshots of other sessions, such as a polling query
# begun before the run committed, which keep them until a later VACUUM)
ok( $node->poll_query_until(
		'app',
		"SELECT vacuum_count >= 1 FROM pg_stat_user_tables WHERE relid = 'pay_current'::regclass"
	),
	'the worker vacuums pay_current after the run (autovacuum is off)');

# --- SIGHUP: a longer naptime holds the worker back, a short one lets it go
reload_with($node, 'archive_cluster.naptime' => 3600);
sleep(3);    # let the worker take the new naptime and start sleeping
make_table('app', 'late', 30000);
sleep(5);
is($node->safe_psql('app', 'SELECT count(*) FROM late_archive'),
	'0', 'naptime = 3600 after reload: the worker waits');
reload_with($node, 'archive_cluster.naptime' => 1);
ok(archived('app', 'late', 30000), 'reload wakes the worker');
make_table('app', 'later', 30000);
ok(archived('app', 'later', 30000), 'naptime = 1 after reload: archived without a signal');

# --- archive_cluster.enabled = off: workers move nothing
reload_with($node, 'archive_cluster.enabled' => 'off');
sleep(3);
make_table('app', 'off', 30000);
sleep(3);
is($node->safe_psql('app', 'SELECT count(*) FROM off_archive'),
	'0', 'enabled = off: nothing archived');
reload_with($node, 'archive_cluster.enabled' => 'on');
ok(archived('app', 'off', 30000), 'enabled = on again: archived');

# --- VACUUM's working memory lives in the worker's own context, emptied after
# each VACUUM.  Without a PortalContext, VACUUM's context had no parent: lost
# at each failed VACUUM, and missing from a dump of the worker's contexts.  A
# transaction holding a lock on an index of the current table keeps the
# worker's VACUUM waiting (it skips a locked table, not a locked index), and
# the worker's memory contexts are logged meanwhile.
alter_system($node, 'archive_cluster.enabled' => 'off');
sleep(3);
make_table('app', 'vac', 30000);
my $locker = $node->background_psql('app');
$locker->query_safe('BEGIN');
$locker->query_safe('ALTER INDEX vac_cid_ts_idx SET TABLESPACE pg_default');
alter_system($node, 'archive_cluster.enabled' => undef);
my $vacuuming = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'archive_cluster worker'
	AND datname = 'app' AND query = 'archive_cluster: vacuuming a current table' AND wait_event_type = 'Lock'";
ok($node->poll_query_until('app', "SELECT EXISTS ($vacuuming)"),
	'the worker VACUUM of vac_current waits for the index lock');
my $vacuum_pid = $node->safe_psql('app', $vacuuming);
is( $node->safe_psql('app',
		"SELECT application_name FROM pg_stat_activity WHERE pid = $vacuum_pid"),
	'archive_cluster worker',
	'the worker shows its application_name');
is( $node->safe_psql('app',
		"SELECT datname || ' ' || activity || ' ' || relation FROM archive_cluster_workers WHERE pid = $vacuum_pid"),
	'app vacuuming vac',
	'archive_cluster_workers: the worker vacuums vac in app');
my $dump_offset = -s $node->logfile;
$node->safe_psql('app', "SELECT pg_log_backend_memory_contexts($vacuum_pid)");
$node->wait_for_log(qr/Grand total: /, $dump_offset);
my ($dump) = slurp_file($node->logfile, $dump_offset);
my ($ours) = $dump =~ /level: (\d+); archive_cluster vacuum: /;
ok( defined $ours && $dump =~ /level: $ours; archive_cluster vacuum: [^\n]*\n(?:[^\n]*level: (?!$ours;)\d+; [^\n]*\n)*?[^\n]*level: @{[$ours + 1]}; Vacuum: /,
	'VACUUM\'s memory context is a child of the worker\'s "archive_cluster vacuum"')
  or diag($dump);
$locker->query_safe('COMMIT');
$locker->quit;
ok( $node->poll_query_until(
		'app',
		"SELECT vacuum_count >= 1 FROM pg_stat_user_tables WHERE relid = 'vac_current'::regclass"),
	'the VACUUM completes once the index lock is gone');

# --- an error in one table is logged and recorded; the worker goes on with the others
my $error_offset = -s $node->logfile;
# (tables of 30,000 due rows without an index on (cid, ts))
my %plain = (
	columns => 'pad text',
	index => 0,
	rows => "SELECT g, g % 50, now() - interval '3 hours', 'x' FROM generate_series(1, 30000) g",
	batch_rows => 20000);
$node->safe_psql('app',
	    "BEGIN;\n"
	  . table_sql('bad', %plain)
	  . "-- a unique index added to a tier after registration: every run refuses it\n"
	  . "CREATE UNIQUE INDEX bad_archive_cid_ts ON bad_archive (cid, ts);\n"
	  . table_sql('good', %plain)
	  . "COMMIT;\n");
ok(archived('app', 'good', 30000), 'the other table is archived');
ok( $node->poll_query_until(
		'app',
		"SELECT count(*) > 0 FROM archive_cluster_runs WHERE relation = 'bad'::regclass AND started_by = 'worker' AND rows_moved = 0 AND error LIKE 'cannot archive rows of \"bad\" because of unique index \"bad_archive_cid_ts\"%'"
	),
	'the failed run is recorded with its error');
ok($node->log_contains(qr/WARNING:  cannot archive rows of "bad" because of unique index "bad_archive_cid_ts" on "bad_archive"\n(.*(DETAIL|HINT):  .*\n)*.*CONTEXT:  archive run of table "bad"/),
	'and logged with its detail, hint and the table');
is($node->safe_psql('app', 'SELECT count(*) FROM bad_current'),
	'30000', 'the failed run moved nothing');
ok( !$node->log_contains(qr/archive_cluster worker[^\n]*exited with exit code/, $error_offset),
	'the worker survived the error: it ended its pass normally');
sleep(3);
is($node->safe_psql('app', "SELECT count(*) <= 3 FROM archive_cluster_runs WHERE relation = 'bad'::regclass"),
	't', 'a failing table is retried with a backoff, not every naptime');
$node->safe_psql('app', 'DROP INDEX bad_archive_cid_ts');
ok(archived('app', 'bad', 30000), 'archived once the index is gone');

# --- a row the archive refuses stays in the current table; the worker moves
# the others, says which row and why, and does not count it as a failure
$node->safe_psql('app',
	    "BEGIN;\n"
	  . table_sql('dup', %plain)
	  . "-- a row planted in the archive behind the view's back, with the key of a current row\n"
	  . "INSERT INTO dup_archive VALUES (1, 1, now(), 'planted');\n"
	  . "COMMIT;\n");
ok(archived('app', 'dup', 30000), 'every other row archived (29,999 and the planted one)');
is($node->safe_psql('app', 'SELECT id, pad FROM dup_current'),
	'1|x', 'the refused row stays in dup_current');
ok( $node->poll_query_until(
		'app',
		"SELECT rows_moved = 29999 AND rows_refused = 1 AND error IS NULL AND left_behind = 'Key (id)=(1) is already in \"dup_archive\" (unique constraint \"dup_archive_pkey\").' FROM archive_cluster_runs WHERE relation = 'dup'::regclass AND started_by = 'worker' ORDER BY run_id LIMIT 1"
	),
	'archive_cluster_runs: rows moved, the row refused, its key and constraint');
ok($node->log_contains(qr/WARNING:  1 row of "dup" cannot be archived\n.*DETAIL:  Key \(id\)=\(1\) is already in "dup_archive" \(unique constraint "dup_archive_pkey"\).\n.*HINT:  Such rows stay in "dup_current"/),
	'a WARNING names the table, the key and the constraint, with a hint');
$node->safe_psql('app', "DELETE FROM dup_archive WHERE pad = 'planted'");

# --- a run in progress elsewhere: the worker skips and says so.  The run
# lock cannot be taken from SQL (t/008_security_worker.pl), so a manual run
# holds it, paused after taking it (debug_pause 'locked').
alter_system($node, 'archive_cluster.enabled' => 'off');
make_table('app', 'ov', 30000);
my (undef, $holder, $runner) = start_paused($node, 'app', 'locked',
	"SELECT status FROM archive_cluster_run('ov', force => true)",
	'a manual run holds the run lock of ov');
my $log_offset = -s $node->logfile;
alter_system($node, 'archive_cluster.enabled' => undef);
$node->wait_for_log(qr/skipping "ov": another archive run or compaction is in progress/, $log_offset);
pass('the worker skips a table whose run lock is held, and logs it');
release_pause($holder, 'locked');
$runner->quit;
ok(archived('app', 'ov', 30000), 'archived once the lock is free');

# --- kill -9 of the worker in the middle of a run (after its delete)
alter_system($node, 'archive_cluster.debug_pause' => 'deleted');
my $pauser = hold_pause($node, 'app', 'deleted');
make_table('app', 'crash', 60000);
$before = state_of('app', 'crash');
ok(wait_paused($node, 'app', 'deleted', worker => 1), 'the worker waits in the middle of its run');
my $pid = paused_pid($node, 'app', 'deleted');
is( $node->safe_psql('app', 'SELECT count(*) FROM crash_current'),
	'60000', 'its delete is not visible to others');
# no new worker after the restart until the archive is looked at: the pause
# lock dies with its holder, and a new worker would move the rows at once
alter_system($node, 'archive_cluster.enabled' => 'off');
crash_backend($node, 'app', $pid, 'kill -9 of the worker', $holder, $pauser);
is(state_of('app', 'crash'), $before, 'after the crash: same rows, none in both tiers');
is($node->safe_psql('app', 'SELECT count(*) FROM crash_archive'),
	'0', 'after the crash: the killed run left nothing in the archive');
alter_system($node, 'archive_cluster.debug_pause' => undef, 'archive_cluster.enabled' => undef);
ok(archived('app', 'crash', 60000), 'the next run completes');
is(state_of('app', 'crash'), $before, 'and keeps every row once');

# --- DROP EXTENSION: the launcher notices, and starts no worker there for
# archive_cluster.extension_recheck_interval (600 s)
$node->safe_psql('app', 'DROP EXTENSION archive_cluster CASCADE');
ok( $node->poll_query_until(
		'mon', "SELECT extension = 'absent' FROM archive_cluster_databases WHERE datname = 'app'"),
	'DROP EXTENSION: app is known to have no extension');
my $starts = $node->safe_psql('mon',
	"SELECT worker_starts FROM archive_cluster_databases WHERE datname = 'app'");
sleep(4);
is( $node->safe_psql(
		'mon', "SELECT worker_starts FROM archive_cluster_databases WHERE datname = 'app'"),
	$starts,
	'no worker starts in a database without the extension (4 naptimes)');

# --- DROP DATABASE is not blocked by a worker in the middle of a run there.
# A CHECK constraint on the archive that sleeps 10 ms a row keeps the
# worker in its run for minutes; without the stop, DROP DATABASE would give
# up after 5 s ("being accessed by other users").
$node->safe_psql('postgres', 'CREATE DATABASE gone');
$node->safe_psql('gone', 'CREATE EXTENSION archive_cluster');
$node->safe_psql('gone',
	    "BEGIN;\n"
	  . table_sql('pay',
		index => 0,
		rows => "SELECT g, g % 50, now() - interval '3 hours' FROM generate_series(1, 30000) g",
		batch_rows => 20000)
	  . "CREATE FUNCTION slow(int) RETURNS boolean LANGUAGE sql AS 'SELECT pg_sleep(0.01) IS NOT NULL';\n"
	  . "ALTER TABLE pay_archive ADD CHECK (slow(cid));\n"
	  . "COMMIT;\n");
ok( $node->poll_query_until(
		'mon',
		"SELECT count(*) = 1 FROM archive_cluster_workers WHERE datname = 'gone' AND activity = 'archiving'"),
	'a worker archives in the database to drop');
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'DROP DATABASE gone');
is($node->safe_psql('postgres', worker_count('gone')), '0', 'DROP DATABASE stops the worker and succeeds');
ok($node->log_contains(qr/terminating background worker "archive_cluster worker" due to administrator command/,
		$log_offset),
	'the worker was stopped, not finished');

# --- a hot standby runs no launcher nor worker
$node->safe_psql('postgres', 'CREATE DATABASE app2');
$node->safe_psql('app2', 'CREATE EXTENSION archive_cluster');
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;
$node->wait_for_catchup($standby);
sleep(3);
is( $standby->safe_psql(
		'postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'archive_cluster%'"),
	'0',
	'no archive_cluster process on a hot standby');
$standby->stop;

$node->stop;
done_testing();
