# A run waits for a standby that lags too far behind.
#
# A streaming standby (through a physical slot) has its replay paused while
# the primary writes more WAL than archive_cluster.max_replica_lag: a forced
# run then waits before its batch (wait event ArchiveClusterReplicaLag on 17
# and later, of type Extension on every version), writing no batch, until
# replay resumes; then it archives every row, and the standby replays the
# same rows into the same tiers.  With archive_cluster.max_replica_wait of
# 1 s, a run stops ("stopped: replica lag", recorded) without moving a row.
# A standby that is down (its slot inactive) is not waited for.  Nothing
# here depends on how fast the machine is: the lag is made by pausing replay.
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
$primary->safe_psql('postgres', q{SELECT pg_create_physical_replication_slot('standby_slot')});
my $state_sql = state_sql('t', with => ['tiers']);

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->append_conf('postgresql.conf',
	"primary_slot_name = 'standby_slot'\nwal_receiver_status_interval = 1");
$standby->start;
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));

# pause replay; write 4 MB of WAL
sub lag_behind
{
	my ($name) = @_;
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
	$primary->safe_psql('postgres',
		qq{CREATE TABLE $name AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 4000) g});
	$primary->poll_query_until('postgres',
		q{SELECT pg_current_wal_flush_lsn() - replay_lsn > 2 * 1024 * 1024 FROM pg_stat_replication})
	  or die 'the standby does not lag';
}
lag_behind('filler');

my $before = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my $runner = $primary->background_psql('postgres', on_error_stop => 0);
$runner->query_until(qr/started/,
	"\\echo started\nSELECT status, rows_moved FROM archive_cluster_run('t', force => true);\n");
ok( $primary->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Extension'
		  AND (current_setting('server_version_num')::int < 170000 OR wait_event = 'ArchiveClusterReplicaLag')
		  AND query LIKE '%archive_cluster_run%' AND pid <> pg_backend_pid()}),
	'the run waits while the standby lags');
# a batch of 3000 rows writes far more WAL than 100 kB
ok( $primary->safe_psql('postgres',
		"SELECT pg_current_wal_insert_lsn() - '$before' < 100 * 1024"),
	'no batch written while it waits');

$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
my $out = $runner->query_safe('SELECT 1');
$runner->quit;
like($out, qr/archived\|3000/, 'once replay resumed, the run archived every row');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', $state_sql), $primary->safe_psql('postgres', $state_sql),
	'the standby replayed the same rows into the same tiers');

# a bounded wait: the run stops and says so, nothing moved
$primary->safe_psql('postgres',
	q{INSERT INTO t SELECT g, g % 50, now() - interval '1 day', 'q' FROM generate_series(3001, 4000) g});
lag_behind('filler2');
my ($rc, $stdout, $stderr) = $primary->psql('postgres',
	q{SET archive_cluster.max_replica_wait = 1; SELECT status || '|' || rows_moved FROM archive_cluster_run('t', force => true)});
is($stdout, 'stopped: replica lag|0', 'after archive_cluster.max_replica_wait the run stops, nothing moved');
like($stderr, qr/NOTICE:  archiving of "t" stopped while a standby or subscriber lags/, 'and says why');
is( $primary->safe_psql('postgres',
		q{SELECT count(*) FROM archive_cluster_runs WHERE detail = 'stopped: replica lag' AND rows_moved = 0}),
	'1', 'the stopped run is recorded');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t'), '4000', 'no row lost');

# a standby that is down (its slot inactive) is not waited for
$standby->stop;
$primary->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_stat_replication})
  or die 'the standby\'s WAL sender did not end';
is( $primary->safe_psql('postgres',
		q{SELECT status || '|' || rows_moved FROM archive_cluster_run('t', force => true)}),
	'archived|1000', 'a standby that is down is not waited for');
is($primary->safe_psql('postgres', q{SELECT active FROM pg_replication_slots WHERE slot_name = 'standby_slot'}),
	'f', 'its slot is inactive');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t_archive'), '4000', 'every row archived');

done_testing();
