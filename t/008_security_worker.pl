# Archiving cannot be held hostage (issue 19, item 4): roles that are not
# trusted with a table cannot stop, stall or skip the archiving of others.
# 1. evil (LOGIN only) takes the advisory lock that was the per-table run
#    lock before the fix, pg_advisory_lock(1094931029, <view oid>): the
#    worker still archives that table (the run lock is no longer a lock SQL
#    can take).
# 2. owner2 holds ACCESS EXCLUSIVE on its own table's tier in an open
#    transaction: the worker skips that table (bounded lock wait, logged),
#    archives owner1's table registered after it, and archives owner2's
#    table once the lock is gone.
# 3. evil's failing DROP DATABASE, ALTER DATABASE ... RENAME and CREATE
#    DATABASE ... TEMPLATE of the database do not stop its worker (a worker
#    held in the middle of a run is still there afterwards and completes).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'hostage',
	'archive_cluster.naptime' => 1,
	'archive_cluster.enabled' => 'off',
	'archive_cluster.lock_timeout' => 200,
	max_worker_processes => 16,
	autovacuum => 'off');

$node->safe_psql(
	'postgres', q{
CREATE ROLE owner1 LOGIN;
CREATE ROLE owner2 LOGIN;
CREATE ROLE evil LOGIN;
CREATE DATABASE app;
});
$node->safe_psql(
	'app', q{
CREATE EXTENSION archive_cluster;
GRANT CREATE ON SCHEMA public TO owner1, owner2;
});

# a registered table of $owner with 5,000 rows older than the hot window
sub make_table
{
	my ($owner, $name) = @_;
	$node->safe_psql('app',
		"SET ROLE $owner;\n"
		  . table_sql($name,
			index => 0,
			rows => "SELECT g, g % 50, now() - interval '3 hours' - g * interval '1 ms' FROM generate_series(1, 5000) g",
			batch_rows => 1000));
}

sub archived_rows
{
	my ($name) = @_;
	return $node->safe_psql('app', "SELECT count(*) FROM ${name}_archive");
}

sub worker_pid
{
	return $node->safe_psql('app',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'archive_cluster worker' AND datname = 'app'"
	);
}

# registration order is the worker's order: t2 (locked) comes before t1
make_table('owner2', 't2');
make_table('owner1', 't1');
make_table('owner1', 't3');

# --- 1. and 2. set up while the worker moves nothing
my $evil = $node->background_psql('app', on_error_stop => 0);
$evil->query_safe('SET ROLE evil');
is( $evil->query_safe(
		"SELECT pg_advisory_lock(1094931029, 't3'::regclass::oid::int) IS NOT NULL"),
	't',
	'evil holds the advisory lock that was the run lock of t3');
my $owner2 = $node->background_psql('app');
$owner2->query_safe('SET ROLE owner2');
$owner2->query_safe('BEGIN');
$owner2->query_safe('LOCK TABLE t2_current IN ACCESS EXCLUSIVE MODE');

my $log_offset = -s $node->logfile;
alter_system($node, 'archive_cluster.enabled' => 'on');

ok(wait_archived($node, 'app', 't1', 5000),
	"owner1's table is archived while owner2 holds ACCESS EXCLUSIVE on t2_current");
ok(wait_archived($node, 'app', 't3', 5000),
	'the table whose old run lock evil holds is archived');
$node->wait_for_log(qr/skipping "t2": could not lock its view or tables within archive_cluster\.lock_timeout/,
	$log_offset);
pass('the worker logs that it skipped the locked table');
is($owner2->query_safe('SELECT count(*) FROM t2_archive'),
	'0', 't2 is left alone while its lock is held');
is( $node->safe_psql('app',
		"SELECT count(*) FROM archive_cluster_runs WHERE relation = 't2'::regclass AND error IS NOT NULL"),
	'0',
	'a skipped table is no failure: no error in archive_cluster_runs');

$owner2->query_safe('COMMIT');
ok(wait_archived($node, 'app', 't2', 5000),
	't2 is archived once its lock is gone');
$evil->query_safe('SELECT pg_advisory_unlock_all()');

# --- 3. failing database commands of evil leave the worker alone.  A worker
# is held in the middle of its run of t4 (debug_pause 'locked': it waits for
# an advisory lock the test holds), so that it would be gone if they stopped it.
my $pauser = hold_pause($node, 'app', 'locked');
alter_system($node, 'archive_cluster.debug_pause' => 'locked');
make_table('owner1', 't4');
ok(wait_paused($node, 'app', 'locked', worker => 1), 'a worker is in the middle of its run of t4');
my $pid = worker_pid();
for my $cmd ('DROP DATABASE app',
	'ALTER DATABASE app RENAME TO app2',
	'CREATE DATABASE evil_copy TEMPLATE app')
{
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "SET ROLE evil; $cmd");
	like($stderr, qr/(must be owner|permission denied)/,
		"evil's \"$cmd\" fails");
}
sleep(2);
is(worker_pid(), $pid, "the worker survived evil's database commands");

alter_system($node, 'archive_cluster.debug_pause' => undef);
release_pause($pauser, 'locked');
$pauser->quit;
ok(wait_archived($node, 'app', 't4', 5000),
	'and that worker completes its run');
ok( !$node->log_contains(qr/terminating background worker "archive_cluster worker/),
	'no archive_cluster worker was stopped');

$evil->quit;
$owner2->quit;
$node->stop;
done_testing();
