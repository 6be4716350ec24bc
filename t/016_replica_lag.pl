# Runs wait for standbys and subscribers that lag too far behind.
#
# A streaming standby (through a physical slot) has its replay paused while
# the primary writes more WAL than archive_cluster.max_replica_lag:
#   - a forced run (a call) then waits before its batch (wait event
#     ArchiveClusterReplicaLag on 17 and later, of type Extension on every
#     version), having written nothing, until replay resumes; then it
#     archives every row (its run-log row says it waited), and the standby
#     replays the same rows;
#   - with archive_cluster.max_replica_wait of 1 s, a call stops ("stopped:
#     replica lag", a NOTICE with the time it waited, no run-log row) without
#     moving a row, and so does a compaction; over two tables, the second
#     finds the statement's budget spent;
#   - the worker leaves a due table alone, logs it once however many passes
#     it makes, and archives it once replay resumes.
# A standby that is down (its slot inactive) is not waited for.  A logical
# subscriber whose apply is blocked (a lock on its table) is waited for too.
# Nothing here depends on how fast the machine is: the lag is made by
# pausing replay or blocking apply.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = new_node('primary', init => { allows_streaming => 'logical' },
	'archive_cluster.enabled' => 'off',
	'archive_cluster.naptime' => 1,
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

# old rows $from to $to into $table
sub old_rows
{
	my ($table, $from, $to) = @_;
	$primary->safe_psql('postgres',
		qq{INSERT INTO $table SELECT g, g % 50, now() - interval '1 day', 'q' FROM generate_series($from, $to) g});
}

# WAL sender of a peer that lags more than 2 MB
my $lagging_sql =
  q{SELECT count(*) > 0 FROM pg_stat_replication WHERE pg_current_wal_flush_lsn() - replay_lsn > 2 * 1024 * 1024};

# pause replay; write 4 MB of WAL
my $fillers = 0;
sub lag_behind
{
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
	$fillers++;
	$primary->safe_psql('postgres',
		qq{CREATE TABLE filler$fillers AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 4000) g});
	$primary->poll_query_until('postgres', $lagging_sql) or die 'the standby does not lag';
}

# a call that waits: started in the background, seen waiting
my $waiting_sql =
  q{SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Extension'
	AND (current_setting('server_version_num')::int < 170000 OR wait_event = 'ArchiveClusterReplicaLag')
	AND query LIKE '%archive_cluster_run%' AND pid <> pg_backend_pid()};
sub start_waiting_run
{
	my ($table, $test_name) = @_;
	my $runner = $primary->background_psql('postgres', on_error_stop => 0);
	$runner->query_until(qr/started/,
		"\\echo started\nSELECT status, rows_moved FROM archive_cluster_run('$table', force => true);\n");
	ok($primary->poll_query_until('postgres', $waiting_sql), $test_name);
	return $runner;
}

# 1. a call waits, having written nothing, until replay resumes
lag_behind();
my $runner = start_waiting_run('t', 'the run waits while the standby lags');
is($primary->safe_psql('postgres', q{SELECT pg_relation_size('t_archive')}),
	'0', 'no batch written while it waits');
is( $primary->safe_psql('postgres',
		q{SELECT relation || '|' || kind || '|' || started_by || '|' || phase || '|' || (replica_lag_bytes > 1024 * 1024)
		  FROM archive_cluster_progress}),
	't|archive|manual|waiting for a lagging standby or subscriber|true',
	'archive_cluster_progress shows the call waiting, and how far the standby lags');
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
my $out = $runner->query_safe('SELECT 1');
$runner->quit;
like($out, qr/archived\|3000/, 'once replay resumed, the run archived every row');
is( $primary->safe_psql('postgres',
		q{SELECT count(*) FROM archive_cluster_runs
		  WHERE detail ~ '^waited [0-9.]+ s for a lagging standby or subscriber$' AND paced > interval '0'}),
	'1', 'its run-log row says how long it waited');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', $state_sql), $primary->safe_psql('postgres', $state_sql),
	'the standby replayed the same rows into the same tiers');

# 2. a bounded wait: the call stops and says so, nothing moved
old_rows('t', 3001, 4000);
lag_behind();
my ($rc, $stdout, $stderr) = $primary->psql('postgres',
	q{SET archive_cluster.max_replica_wait = 1; SELECT status || '|' || rows_moved FROM archive_cluster_run('t', force => true)});
is($stdout, 'stopped: replica lag|0', 'after archive_cluster.max_replica_wait the run stops, nothing moved');
like($stderr, qr/NOTICE:  archiving of "t" stopped while a standby or subscriber lags \d+ kB behind\n.*after 1\.\d s of waiting/,
	'and says why, and how long it waited');
is($primary->safe_psql('postgres', q{SELECT count(*) FROM archive_cluster_runs WHERE detail LIKE '%stopped%'}),
	'0', 'a call that moved nothing writes no run-log row (the next run is not misled)');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t'), '4000', 'no row lost');
($rc, $stdout, $stderr) = $primary->psql('postgres',
	q{SET archive_cluster.max_replica_wait = 1; SELECT status FROM archive_cluster_compact('t', force => true)});
is($stdout, 'stopped: replica lag', 'a compaction stops the same way');
like($stderr, qr/NOTICE:  compaction of "t" stopped while a standby or subscriber lags/, '... and says so');

# one budget per statement: the second table finds it spent
$primary->safe_psql('postgres',
	table_sql('u', columns => 'pad text NOT NULL', batch_rows => 1000,
		rows => q{SELECT g, g % 50, now() - interval '1 day', 'u' FROM generate_series(1, 1000) g}));
($rc, $stdout, $stderr) = $primary->psql('postgres',
	q{SET archive_cluster.max_replica_wait = 1;
	  SELECT string_agg(status, ',') FROM archive_cluster_run(force => true)});
is($stdout, 'stopped: replica lag,stopped: replica lag', 'a statement over two tables stops for both');
like($stderr, qr/after 1\.\d s of waiting.*after 0\.0 s of waiting/s,
	'the second waited nothing: the budget is the statement\'s');

# 3. the worker leaves a due table alone while the standby lags, says so once
my $log_offset = -s $primary->logfile;
alter_system($primary, 'archive_cluster.enabled' => 'on', 'archive_cluster.max_replica_wait' => '1s');
$primary->wait_for_log(qr/LOG:  archiving stopped while a standby or subscriber lags/, $log_offset);
my $starts = $primary->safe_psql('postgres',
	q{SELECT worker_starts FROM archive_cluster_databases WHERE datname = 'postgres'});
$primary->poll_query_until('postgres',
	qq{SELECT worker_starts >= $starts + 3 AND last_worker_end > last_worker_start
	   FROM archive_cluster_databases WHERE datname = 'postgres'})
  or die 'the worker made no further passes';
my $log = slurp_file($primary->logfile, $log_offset);
my $told = () = $log =~ /archiving stopped while a standby or subscriber lags/g;
is($told, 1, 'the worker says once that it stops for the lag, however many passes it makes');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t_archive'), '3000', 'the worker moved nothing meanwhile');
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
ok(wait_archived($primary, 'postgres', 't', 4000), 'once replay resumed, the worker archives the table');
alter_system($primary, 'archive_cluster.enabled' => 'off', 'archive_cluster.max_replica_wait' => undef);
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', $state_sql), $primary->safe_psql('postgres', $state_sql),
	'the standby has the same rows in the same tiers');

# 4. a standby that is down (its slot inactive) is not waited for
old_rows('t', 4001, 5000);
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$standby->stop;
$primary->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_stat_replication})
  or die 'the standby\'s WAL sender did not end';
$primary->safe_psql('postgres',
	q{CREATE TABLE filler_down AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 4000) g});
is( $primary->safe_psql('postgres',
		q{SELECT status || '|' || rows_moved FROM archive_cluster_run('t', force => true)}),
	'archived|1000', 'a standby that is down is not waited for');
is($primary->safe_psql('postgres', q{SELECT active FROM pg_replication_slots WHERE slot_name = 'standby_slot'}),
	'f', 'its slot is inactive');
$primary->safe_psql('postgres', q{SELECT pg_drop_replication_slot('standby_slot')});

# 5. a logical subscriber whose apply is blocked is waited for
my $sub = new_node('sub', 'archive_cluster.enabled' => 'off');
my $l_sql = 'CREATE TABLE l (g int PRIMARY KEY, pad text)';
$sub->safe_psql('postgres', $l_sql);
$primary->safe_psql('postgres', "$l_sql;\nCREATE PUBLICATION pl FOR TABLE l");
my $connstr = $primary->connstr . ' dbname=postgres';
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION sl CONNECTION '$connstr' PUBLICATION pl WITH (slot_name = 'sl')");
$sub->wait_for_subscription_sync($primary, 'sl');
my $blocker = $sub->background_psql('postgres');
$blocker->query_safe('BEGIN; LOCK TABLE l IN ACCESS EXCLUSIVE MODE');
$primary->safe_psql('postgres',
	q{INSERT INTO l SELECT g, md5(g::text) FROM generate_series(1, 50000) g});
# the subscriber received most of that before its apply blocked: more WAL
$primary->safe_psql('postgres',
	q{CREATE TABLE filler_sub AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 4000) g});
$primary->poll_query_until('postgres', $lagging_sql) or die 'the subscriber does not lag';
old_rows('t', 5001, 6000);
my $size = $primary->safe_psql('postgres', q{SELECT pg_relation_size('t_archive')});
$runner = start_waiting_run('t', 'the run waits while the subscriber\'s apply is blocked');
is($primary->safe_psql('postgres', q{SELECT pg_relation_size('t_archive')}),
	$size, 'no batch written while it waits');
$blocker->query_safe('COMMIT');
$blocker->quit;
$out = $runner->query_safe('SELECT 1');
$runner->quit;
like($out, qr/archived\|1000/, 'once the subscriber applied, the run archived its rows');
$primary->wait_for_catchup('sl');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM l'), '50000', 'the subscriber has every row');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t'), '6000', 'no row lost');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM t_archive'), '6000', 'every row archived');

done_testing();
