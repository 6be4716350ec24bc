# The pg_cron recipe of docs/user-guide.md: a job that runs
# SELECT archive_cluster_run() archives a due table.  The background
# worker is off, so only pg_cron can have done it.  pg_cron schedules by the
# minute: this test waits up to about two minutes.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('cron');
$node->init;
$node->append_conf(
	'postgresql.conf', qq{
shared_preload_libraries = 'archive_cluster, pg_cron'
archive_cluster.enabled = off
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pg_cron;
CREATE EXTENSION archive_cluster;
CREATE TABLE pay (id bigint PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, amount numeric);
CREATE INDEX ON pay (cid, ts);
INSERT INTO pay SELECT g, g % 500, now() - interval '3 hours' - g * interval '1 ms', g
FROM generate_series(1, 30000) g;
SELECT archive_cluster_register('pay', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 10000);
});
my $before = $node->safe_psql('postgres',
	"SELECT count(*) || ':' || sum(hashtext(p::text)::bigint) FROM pay p");

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
is( $node->safe_psql(
		'postgres',
		"SELECT count(*) || ':' || sum(hashtext(p::text)::bigint) FROM pay p"),
	$before,
	'same rows after the run');

$node->stop;
done_testing();
