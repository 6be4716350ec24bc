# A table owner's own code cannot hold the worker pool (issue 38, 2): the
# owner "ev" of a table in each of two databases adds to its archive
# CHECK (ev.slow(id)) NOT VALID, slow() sleeping an hour, and gives the
# table due rows.  With archive_cluster.max_workers = 2 both workers of the
# pool sit in those tables' batches; before archive_cluster.job_timeout,
# nothing ended them and no other database was archived any more.
# - a third database's due table (another owner) is archived within 60 s;
# - in ev1 the job is canceled at its timeout: logged, recorded in the run
#   history with its SQLSTATE (57014) as a failure (the table then waits for
#   its backoff), the rows still in the current tier;
# - in ev2 slow() catches the cancel and sleeps on: the launcher ends that
#   worker 10 s after the job's timeout (its log says so);
# - the worker pool goes on serving: every slot is free again in the end.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $job_timeout = 5;    # archive_cluster.job_timeout, s

my $node = new_node(
	'owner_code',
	'archive_cluster.max_workers' => 2,
	'archive_cluster.worker_time_slice' => 2,
	'archive_cluster.naptime' => 1,
	'archive_cluster.job_timeout' => $job_timeout,
	'archive_cluster.compaction' => 'off',
	'archive_cluster.enabled' => 'off',
	autovacuum => 'off');

$node->safe_psql(
	'postgres', q{
CREATE ROLE ev LOGIN;
CREATE ROLE good LOGIN;
CREATE DATABASE ev1;
CREATE DATABASE ev2;
CREATE DATABASE good;
});

# a registered table of ev's with 5 due rows, its archive refusing nothing
# but taking an hour per row ($body: slow()'s body)
sub make_slow_table
{
	my ($db, $body) = @_;
	$node->safe_psql($db, q{
CREATE EXTENSION archive_cluster;
CREATE SCHEMA ev AUTHORIZATION ev;
});
	$node->safe_psql(
		$db, qq{
SET ROLE ev;
CREATE FUNCTION ev.slow(bigint) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
$body
	RETURN true;
END
\$\$;
CREATE TABLE ev.t (id bigint PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
SELECT archive_cluster_register('ev.t', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 5);
ALTER TABLE ev.t_archive ADD CONSTRAINT slow CHECK (ev.slow(id)) NOT VALID;
INSERT INTO ev.t SELECT g, g, now() - interval '2 hours' FROM generate_series(1, 5) g;
});
}

make_slow_table('ev1', q{	PERFORM pg_sleep(3600);});
# catches the cancel of the job's timeout, and sleeps again
make_slow_table(
	'ev2', q{
	LOOP
		BEGIN
			PERFORM pg_sleep(3600);
		EXCEPTION WHEN query_canceled THEN
			RAISE LOG 'ev.slow() caught the cancel';
		END;
	END LOOP;});

my $log_offset = -s $node->logfile;
alter_system($node, 'archive_cluster.enabled' => 'on');

# both workers of the pool sit in ev's batches
ok( $node->poll_query_until(
		'ev1', q{
SELECT count(DISTINCT datname) = 2 FROM archive_cluster_workers
WHERE activity = 'archiving' AND datname IN ('ev1', 'ev2')}),
	'both workers of the pool are in the batches of ev\'s tables');

# now a third database gets a due table of another owner
my $start = time();
$node->safe_psql('good',
	'CREATE EXTENSION archive_cluster; CREATE SCHEMA g AUTHORIZATION good;');
$node->safe_psql('good',
	    "SET ROLE good;\n"
	  . "SET search_path = g, public;\n"
	  . table_sql('pay',
		index => 0,
		rows => "SELECT g, g % 10, now() - interval '2 hours' FROM generate_series(1, 1000) g",
		batch_rows => 100));
my $archived = 0;
while (time() - $start < 60)
{
	$archived = $node->safe_psql('good', 'SELECT count(*) FROM g.pay_archive');
	last if $archived == 1000;
	usleep(200_000);
}
my $took = time() - $start;
is($archived, 1000, 'the third database\'s due table is archived');
cmp_ok($took, '<', 60,
	sprintf('within 60 s while ev\'s tables hold up their batches (took %.1f s)', $took));

# ev1: canceled at its timeout, recorded as the table's failure
ok( $node->poll_query_until(
		'ev1', q{
SELECT count(*) > 0 FROM archive_cluster_runs
WHERE error LIKE 'canceling the run of table "t" due to archive_cluster.job_timeout'}),
	'ev1: the run canceled at archive_cluster.job_timeout is in the run history');
is($node->safe_psql('ev1', 'SELECT count(*) FROM ONLY ev.t_current'),
	'5', 'ev1: the rows are still in the current tier');
ok( $node->wait_for_log(
		qr/canceling the run of table "t" due to archive_cluster\.job_timeout.*\n.*DETAIL:  The job ran longer than archive_cluster\.job_timeout \($job_timeout s\)\./,
		$log_offset),
	'ev1: the cancel is logged with its detail');

# ev2: the cancel is caught; the launcher ends the worker
ok($node->wait_for_log(qr/ev\.slow\(\) caught the cancel/, $log_offset),
	'ev2: slow() caught the cancel of the job');
ok( $node->wait_for_log(
		qr/WARNING:  terminating archive_cluster worker with PID \d+: its job ran past archive_cluster\.job_timeout/,
		$log_offset),
	'ev2: the launcher ends the worker still at its job');
# the next worker of ev2 records it as the table's failure: the table waits
# for its backoff instead of holding every pass of its database
ok( $node->poll_query_until(
		'ev2', q{
SELECT count(*) > 0 FROM archive_cluster_runs
WHERE error = 'terminating archive_cluster worker: its job ran past archive_cluster.job_timeout'}),
	'ev2: the ended job is recorded in the run history as the table\'s failure');

# no worker is left in ev's batches for good: ev2's worker has gone
my $ev2_pid = $node->safe_psql('ev1',
	"SELECT pid FROM archive_cluster_workers WHERE datname = 'ev2' AND activity = 'archiving'");
ok( $node->poll_query_until(
		'ev1', qq{
SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = ${\($ev2_pid || 0)})
   AND NOT EXISTS (SELECT FROM archive_cluster_workers
				   WHERE datname IN ('ev1', 'ev2') AND activity = 'archiving'
					 AND started_at < now() - interval '${\($job_timeout + 15)} s')}),
	'no worker stays in ev\'s batches past its job timeout');

$node->stop;
done_testing();
