# The pg_cron recipe of docs/user-guide.md: a job that runs
# SELECT archive_cluster_run() archives a due table.  The background
# worker is off, so only pg_cron can have done it.  pg_cron schedules by the
# minute: this test waits up to about two minutes.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'cron',
	shared_preload_libraries => 'archive_cluster, pg_cron',
	'archive_cluster.enabled' => 'off',
	'cron.database_name' => 'postgres',
	'cron.use_background_workers' => 'on',
	max_worker_processes => 16);

$node->safe_psql('postgres',
	    "CREATE EXTENSION pg_cron;\n"
	  . "CREATE EXTENSION archive_cluster;\n"
	  . table_sql('pay',
		columns => 'amount numeric',
		rows => "SELECT g, g % 500, now() - interval '3 hours' - g * interval '1 ms', g FROM generate_series(1, 30000) g",
		batch_rows => 10000));
my $before = tier_state($node, 'postgres', 'pay');

$node->safe_psql('postgres',
	"SELECT cron.schedule('archive', '* * * * *', 'SELECT archive_cluster_run()')");

my $timeout = $PostgreSQL::Test::Utils::timeout_default;
$PostgreSQL::Test::Utils::timeout_default = 200 if $timeout < 200;
ok( $node->poll_query_until(
		'postgres', 'SELECT count(*) = 30000 FROM pay_archive'),
	'the pg_cron job archived the table');
is( $node->safe_psql(
		'postgres',
		"SELECT started_by || ' ' || rows_moved FROM archive_cluster_runs WHERE relation = 'pay'::regclass"
	),
	'pg_cron 30000',
	'the run is recorded as started by pg_cron');
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM cron.job_run_details WHERE status = 'succeeded'"),
	'pg_cron reports the job as succeeded');
is(tier_state($node, 'postgres', 'pay'), $before, 'same rows after the run');

$node->stop;
done_testing();
