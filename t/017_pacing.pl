# Pacing by effect: a job slows down when others' transactions do.
#
#   - A procedure's COMMITs are not timed, its first one neither (counted
#     from its CALL, each would look as long as the procedure had run, and
#     one procedure that commits in a loop would hold every job at its
#     floor).
#   - Alone, runs are not paced, two in a row in one session too, by effect
#     and under pacing = 'rate'.
#   - A procedure that commits in a loop (its COMMITs are not timed) makes a
#     run pace itself: others write when any writing transaction of theirs
#     ends, timed or not.
#   - While a run writes among a session whose transactions are slow (200 ms
#     each, pg_sleep in the statement), the run halves its WAL rate down to
#     archive_cluster.min_wal_rate; archive_cluster_progress shows it paced
#     by commit latency while it runs, and its run-log row says how far it
#     went down and why.  The slowness is made, not measured: nothing here
#     depends on how fast the machine is.
#   - Paced by effect, the run has the kernel write back its relations (the
#     current tier it deletes from, the archive's indexes) as it goes.
#   - The worker's VACUUM after a run is throttled as autovacuum's is
#     (autovacuum_vacuum_cost_delay and _limit): seen sleeping in
#     VacuumDelay.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# nobody writes but the test's sessions (autovacuum's ANALYZE would take
# transaction IDs); fsync on, as a job asks for no writeback without it
my $node = new_node('pacing',
	autovacuum => 'off',
	fsync => 'on',
	'archive_cluster.enabled' => 'off');
my $rows = q{SELECT g, g % 100, now() - interval '1 day', repeat('p', 300) FROM generate_series(1, %d) g};
$node->safe_psql('postgres',
	"CREATE EXTENSION archive_cluster;\n"
	  . "CREATE TABLE others (x int);\n"
	  . table_sql('t', columns => 'pad text NOT NULL', batch_rows => 1000, rows => sprintf($rows, 100000))
	  . table_sql('a', columns => 'pad text NOT NULL', batch_rows => 1000, rows => sprintf($rows, 20000))
	  . table_sql('b', columns => 'pad text NOT NULL', batch_rows => 1000, rows => sprintf($rows, 20000))
	  . table_sql('c', columns => 'pad text NOT NULL', batch_rows => 1000, rows => sprintf($rows, 20000))
	  . table_sql('d', columns => 'pad text NOT NULL', batch_rows => 1000, rows => sprintf($rows, 20000))
	  . table_sql('p', columns => 'pad text NOT NULL', batch_rows => 1000, rows => sprintf($rows, 100000)));

# quick commits in autocommit, one statement each, as psql sends a script
# (sessions that go on committing use \watch: a long script would fill the
# pipe to psql)
sub quick_commits
{
	my ($n) = @_;
	$node->safe_psql('postgres', "INSERT INTO others VALUES (1);\n" x $n);
}

my $quiet_p99_sql = q{SELECT p99_ms FROM archive_cluster_commit_latency WHERE histogram = 'quiet'};

# 1. commits inside a procedure are not timed.  The set-up's slow commits
# (DDL, the table's rows) fade first: the quiet histogram halves for every 4 s
# gone by, at its next commit.
$node->safe_psql('postgres', q{
	CREATE PROCEDURE commit_loop() LANGUAGE plpgsql AS $$
	BEGIN
		FOR i IN 1..3 LOOP
			PERFORM pg_sleep(0.5);
			INSERT INTO others VALUES (i);
			COMMIT;
		END LOOP;
	END $$});
sleep(13);
quick_commits(200);
$node->safe_psql('postgres', "CALL commit_loop();\n" x 4);
cmp_ok($node->safe_psql('postgres', $quiet_p99_sql), '<', 300,
	'the commits of a procedure (0.5 s to 1.5 s after its CALL, four CALLs) are not counted');
cmp_ok($node->safe_psql('postgres', q{SELECT commits FROM archive_cluster_commit_latency WHERE histogram = 'quiet'}),
	'>=', 10, 'quick commits are counted');

# 2. alone, jobs are not paced: two runs in one session.  By effect, others
# write when a writing transaction of theirs ended within the last second and
# since the job began (the procedure's COMMITs just above do not count);
# under pacing = 'rate', when one took a transaction ID (the second run's
# first look comes after its own first write: its own ID is not taken for
# another writer's).
$node->safe_psql('postgres', q{
	SELECT rows_moved FROM archive_cluster_run('a', force => true);
	SELECT rows_moved FROM archive_cluster_run('b', force => true);});
is( $node->safe_psql('postgres',
		q{SELECT string_agg(relation::text || ':' || rows_moved || ':' || (paced = '0') || ':' || (detail IS NULL), ',' ORDER BY relation::text)
		  FROM archive_cluster_runs WHERE relation::text IN ('a', 'b')}),
	'a:20000:true:true,b:20000:true:true', 'two runs alone in one session: neither paced');
$node->safe_psql('postgres', q{
	SET archive_cluster.pacing = 'rate';
	SELECT rows_moved FROM archive_cluster_run('c', force => true);
	SELECT rows_moved FROM archive_cluster_run('d', force => true);});
is( $node->safe_psql('postgres',
		q{SELECT string_agg(relation::text || ':' || rows_moved || ':' || (paced = '0'), ',' ORDER BY relation::text)
		  FROM archive_cluster_runs WHERE relation::text IN ('c', 'd')}),
	'c:20000:true,d:20000:true', 'under pacing = rate too');

# 2b. writers whose transactions are not timed still make a job pace itself:
# a procedure that commits every 10 ms (its COMMITs are not timed, section 1)
my $proc = $node->background_psql('postgres', on_error_stop => 0);
$node->safe_psql('postgres', q{
	CREATE PROCEDURE commit_forever() LANGUAGE plpgsql AS $$
	BEGIN
		LOOP
			INSERT INTO others VALUES (4);
			COMMIT;
			PERFORM pg_sleep(0.01);
		END LOOP;
	END $$});
$proc->query_until(qr/looping/, "\\echo looping\nCALL commit_forever();\n");
my $prun = $node->background_psql('postgres', on_error_stop => 0);
$prun->query_safe("SET archive_cluster.run_max_wal_rate = 16;");
$prun->query_until(qr/started/,
	"\\echo started\nSELECT status, rows_moved FROM archive_cluster_run('p', force => true);\n");
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM archive_cluster_progress WHERE relation = 'p'::regclass AND pace_reason <> 'alone'}),
	'a run among a procedure committing in a loop paces itself');
$node->safe_psql('postgres',
	q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	  WHERE query LIKE 'CALL commit_forever()%' AND pid <> pg_backend_pid()});
like($prun->query_safe('SELECT 1'), qr/archived\|100000/, 'and archives every row');
eval { $proc->quit; };
$prun->quit;
is($node->safe_psql('postgres', q{SELECT paced > interval '0' FROM archive_cluster_runs WHERE relation = 'p'::regclass}),
	't', 'its run-log row says it was paced');

# 3. a run among slow transactions halves its rate down to the floor.  A
# writer of quick transactions makes the run pace itself from its start
# (alone, it would not); once the run is seen pacing by commit latency, a
# second session's inserts take 200 ms each (pg_sleep in the statement) and
# the first one ends.  The run starts at a quarter of its ceiling (4 MB/s)
# and writes some 50 MB of WAL: it is still writing when the slow
# transactions come, whatever the machine's speed.
my $quick = $node->background_psql('postgres', on_error_stop => 0);
$quick->query_until(qr/quick/,
	"\\echo quick\nINSERT INTO others VALUES (2) \\watch 0.01\n");
my $run = $node->background_psql('postgres', on_error_stop => 0);
$run->query_safe(
	"SET archive_cluster.run_max_wal_rate = 16; SET archive_cluster.min_wal_rate = 2; SET log_min_messages = debug1;");
$run->query_until(qr/started/,
	"\\echo started\nSELECT status, rows_moved FROM archive_cluster_run('t', force => true);\n");
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM archive_cluster_progress WHERE pace_reason = 'commit latency'}),
	'among quick commits the run paces itself by commit latency');

my $slow = $node->background_psql('postgres', on_error_stop => 0);
$slow->query_until(qr/slow/,
	"\\echo slow\nINSERT INTO others SELECT 3 FROM pg_sleep(0.2) \\watch 0.01\n");
$node->safe_psql('postgres',
	q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	  WHERE query LIKE 'INSERT INTO others VALUES (2)%' AND pid <> pg_backend_pid()});
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM archive_cluster_progress WHERE pace_reason = 'floor'}),
	'among slow transactions it slows down to archive_cluster.min_wal_rate');

# alone again, it goes at full speed and ends
$node->safe_psql('postgres',
	q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	  WHERE query LIKE 'INSERT INTO others SELECT 3%' AND pid <> pg_backend_pid()});
my $out = $run->query_safe('SELECT 1');
eval { $quick->quit; };
eval { $slow->quit; };
$run->quit;
like($out, qr/archived\|100000/, 'the run archived every row');
like( $node->safe_psql('postgres', q{SELECT detail FROM archive_cluster_runs ORDER BY run_id DESC LIMIT 1}),
	qr/^paced by commit latency: [0-9.]+ MB\/s at the end, 2\.0 at the lowest, halved [1-9][0-9]* times/,
	'its run-log row says it was paced by commit latency, down to the floor');
is($node->safe_psql('postgres', q{SELECT paced > interval '0' FROM archive_cluster_runs ORDER BY run_id DESC LIMIT 1}),
	't', 'and for how long');
# the pages it deleted rows from and its index entries are written back as it
# goes, not left to the kernel's dirty page cache for 30 s
like(slurp_file($node->logfile),
	qr/archive_cluster: the kernel writes back t_current, t_archive_\w+, t_archive_\w+ as the job goes/,
	'the run had the kernel write back the current tier and the archive\'s two indexes as it went');

# 4. the worker's VACUUM after its run is throttled as autovacuum's is: it
# sleeps in VacuumDelay (autovacuum_vacuum_cost_delay and _limit, here 20 ms
# per 1000 credits, some seconds for the ~10,000 pages the run emptied)
$node->safe_psql('postgres',
	table_sql('w', columns => 'pad text NOT NULL', batch_rows => 1000,
		rows => q{SELECT g, g % 100, now() - interval '1 day', repeat('w', 300) FROM generate_series(1, 200000) g}));
reload_with($node,
	autovacuum => 'off',
	'autovacuum_vacuum_cost_delay' => '20ms',
	'autovacuum_vacuum_cost_limit' => 1000,
	'archive_cluster.naptime' => 1,
	'archive_cluster.enabled' => 'on');
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'archive_cluster worker' AND wait_event = 'VacuumDelay'}),
	"the worker's VACUUM sleeps as autovacuum's does");
ok(wait_archived($node, 'postgres', 'w', 200000), 'and the worker archived every row');

$node->stop;
done_testing();
