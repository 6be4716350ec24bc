# A run waits for a standby that lags too far behind.
#
# A streaming standby's replay is paused (pg_wal_replay_pause()) while the
# primary writes more WAL than archive_cluster.max_replica_lag: a forced run
# then waits before its batch (wait event type Extension), moving nothing,
# until replay resumes; then it archives every row, and the standby replays
# the same rows into the same tiers.  With archive_cluster.max_replica_wait
# of 1 s, a run stops without moving a row.  A standby that is down is not
# waited for.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = new_node('primary', init => { allows_streaming => 1 },
	'archive_cluster.enabled' => 'off',
	'archive_cluster.max_replica_lag' => '1MB');
$primary->safe_psql('postgres',
	"CREATE EXTENSION archive_cluster;\n"
	  . table_sql('t', columns => 'pad text NOT NULL', batch_rows => 1000,
		rows => q{SELECT g, g % 50, now() - interval '1 day', 'p' FROM generate_series(1, 3000) g}));
my $state_sql = state_sql('t', with => ['tiers']);

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

# replay paused, then 4 MB of WAL written
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$primary->safe_psql('postgres',
	q{CREATE TABLE filler AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 4000) g});
$primary->poll_query_until('postgres',
	q{SELECT pg_current_wal_insert_lsn() - replay_lsn > 2 * 1024 * 1024 FROM pg_stat_replication})
  or die 'the standby does not lag';

my $runner = $primary->background_psql('postgres', on_error_stop => 0);
$runner->query_until(qr/started/,
	"\\echo started\nSELECT status, rows_moved FROM archive_cluster_run('t', force => true);\n");
ok( $primary->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query LIKE '%archive_cluster_run%' AND pid <> pg_backend_pid()}),
	'the run waits while the standby lags');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t_archive'),
	'0', 'nothing moved while it waits');

$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
my $out = $runner->query_safe('SELECT 1');
$runner->quit;
like($out, qr/archived\|3000/, 'once replay resumed, the run archived every row');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', $state_sql), $primary->safe_psql('postgres', $state_sql),
	'the standby replayed the same rows into the same tiers');

# a bounded wait: the run stops, nothing moved
$primary->safe_psql('postgres',
	q{INSERT INTO t SELECT g, g % 50, now() - interval '1 day', 'q' FROM generate_series(3001, 4000) g});
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$primary->safe_psql('postgres',
	q{CREATE TABLE filler2 AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 4000) g});
$primary->poll_query_until('postgres',
	q{SELECT pg_current_wal_insert_lsn() - replay_lsn > 2 * 1024 * 1024 FROM pg_stat_replication})
  or die 'the standby does not lag';
is( $primary->safe_psql('postgres',
		q{SET archive_cluster.max_replica_wait = 1; SELECT rows_moved FROM archive_cluster_run('t', force => true)}),
	'0', 'after archive_cluster.max_replica_wait the run stops, nothing moved');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t'), '4000', 'no row lost');

# a standby that is down is not waited for
$standby->stop;
like( $primary->safe_psql('postgres',
		q{SELECT status || '|' || rows_moved FROM archive_cluster_run('t', force => true)}),
	qr/\|1000$/, 'a standby that is down is not waited for');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t_archive'), '4000', 'every row archived');

done_testing();
