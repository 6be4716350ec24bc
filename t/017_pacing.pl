# Pacing by effect: a job slows down when others' commits do.
#
#   - A COMMIT inside a procedure is not timed: counted from its CALL, each
#     would look as long as the procedure had run, and one procedure that
#     commits in a loop would hold every job at its floor.
#   - While a run writes among a session whose commits are slow (its
#     commit_delay, 100 ms at each WAL flush), the run halves its WAL rate
#     down to archive_cluster.min_wal_rate; archive_cluster_progress shows it
#     paced by commit latency while it runs, and its run-log row says how far
#     it went down and why.  The slowness is made, not measured: nothing here
#     depends on how fast the machine is.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# commit_delay sleeps only where WAL is flushed for real
my $node = new_node('pacing',
	fsync => 'on',
	'archive_cluster.enabled' => 'off');
$node->safe_psql('postgres',
	"CREATE EXTENSION archive_cluster;\n"
	  . "CREATE TABLE others (x int);\n"
	  . table_sql('t', columns => 'pad text NOT NULL', batch_rows => 1000,
		rows => q{SELECT g, g % 100, now() - interval '1 day', repeat('p', 300) FROM generate_series(1, 60000) g}));

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
		FOR i IN 1..10 LOOP
			INSERT INTO others VALUES (i);
			COMMIT;
			PERFORM pg_sleep(0.3);
		END LOOP;
	END $$});
sleep(13);
quick_commits(200);
$node->safe_psql('postgres', 'CALL commit_loop()');
cmp_ok($node->safe_psql('postgres', $quiet_p99_sql), '<', 250,
	'the commits of a procedure (made 0.3 s to 2.7 s after its CALL) are not counted');
cmp_ok($node->safe_psql('postgres', q{SELECT commits FROM archive_cluster_commit_latency WHERE histogram = 'quiet'}),
	'>=', 50, 'quick commits are counted');

# 2. a run among slow commits halves its rate down to the floor.  A writer
# of quick commits makes the run pace itself from its start (alone, it would
# not); once the run is seen pacing by commit latency, a second session
# commits slowly (commit_delay: 100 ms at each WAL flush) and the first one
# ends.  The run starts at a quarter of its ceiling (4 MB/s) and writes some
# 40 MB of WAL: it is still writing when the slow commits come, whatever the
# machine's speed.
$node->safe_psql('postgres',
	q{INSERT INTO t SELECT g, g % 100, now() - interval '1 day', repeat('p', 300) FROM generate_series(60001, 100000) g});
my $quick = $node->background_psql('postgres', on_error_stop => 0);
$quick->query_until(qr/quick/,
	"\\echo quick\nINSERT INTO others VALUES (2) \\watch 0.01\n");
my $run = $node->background_psql('postgres', on_error_stop => 0);
$run->query_safe(
	"SET archive_cluster.run_max_wal_rate = 16; SET archive_cluster.min_wal_rate = 2;");
$run->query_until(qr/started/,
	"\\echo started\nSELECT status, rows_moved FROM archive_cluster_run('t', force => true);\n");
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM archive_cluster_progress WHERE pace_reason = 'commit latency'}),
	'among quick commits the run paces itself by commit latency');

my $slow = $node->background_psql('postgres', on_error_stop => 0);
$slow->query_until(qr/slow/,
	"SET commit_delay = 100000;\nSET commit_siblings = 0;\n\\echo slow\nINSERT INTO others VALUES (3) \\watch 0.01\n");
$node->safe_psql('postgres',
	q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	  WHERE query LIKE 'INSERT INTO others VALUES (2)%' AND pid <> pg_backend_pid()});
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM archive_cluster_progress WHERE pace_reason = 'floor'}),
	'among slow commits it slows down to archive_cluster.min_wal_rate');

# alone again, it goes at full speed and ends
$node->safe_psql('postgres',
	q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	  WHERE query LIKE 'INSERT INTO others VALUES (3)%' AND pid <> pg_backend_pid()});
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

$node->stop;
done_testing();
