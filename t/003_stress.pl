# Stress with an invariant.  pgbench clients increment counters through the
# view (n = n + 1, one row per transaction, --max-tries retries 40001) while
# another pgbench client runs archive_cluster_run() every 100-200 ms.  The
# rows keep aging out during the test: row i is due 100 ms x i after the
# start, so every run moves the few rows that just became due, and half of
# the clients aim at exactly those rows (the rows a run is moving), the other
# half at any row (current or archived).  Two phases: READ COMMITTED, then
# REPEATABLE READ.  After each phase:
#   sum of the counters = transactions pgbench reports as committed
#   row count unchanged, no key twice, no row in both tables,
#   runs moved rows, no client nor run failed outright;
# and at the end amcheck finds both tables and all their indexes sound.
# Bounded by pgbench -T (about 70 s in all); nothing here asserts speed.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

my $rows = 1200;            # row i is due at t0 + 100 ms x i: 120 s of rows
my @phases = (['read committed', 40], ['repeatable read', 25]);

my $node = new_node(
	'stress',
	'archive_cluster.enabled' => 'off',
	max_connections => 40,
	autovacuum_naptime => 1);

my $t0 = int(time()) + 2;
$node->safe_psql('postgres',
	    "CREATE EXTENSION archive_cluster;\n"
	  . "CREATE EXTENSION amcheck;\n"
	  . table_sql('c',
		id => 'int PRIMARY KEY',
		columns => "n bigint NOT NULL DEFAULT 0, pad text NOT NULL DEFAULT repeat('x', 40)",
		rows => "(id, cid, ts)
SELECT g, g % 37, to_timestamp($t0) + g * interval '100 ms' FROM generate_series(1, $rows) g",
		hot_window => '0',
		batch_rows => 1));

my $dir = PostgreSQL::Test::Utils::tempdir;
sub script
{
	my ($name, $text) = @_;
	open my $fh, '>', "$dir/$name" or die $!;
	print $fh $text;
	close $fh;
	return "$dir/$name";
}
# rows around the aging boundary: just moved, being moved, about to be
my $edge = script('edge.sql', q{
SELECT ((extract(epoch FROM clock_timestamp()) - :t0) * 10)::int AS pos \gset
\set id least(greatest(:pos + random(-15, 5), 1), :rows)
UPDATE c SET n = n + 1 WHERE id = :id;
});
my $any = script('any.sql', q{
\set id random(1, :rows)
UPDATE c SET n = n + 1 WHERE id = :id;
});
my $run = script('run.sql', q{
SELECT rows_moved FROM archive_cluster_run('c', force => true);
\set pause random(100, 200)
\sleep :pause ms
});

my @conn = ('-h', $node->host, '-p', $node->port, '-n', 'postgres');

sub count_of
{
	my ($out, $what) = @_;
	return $out =~ /^$what: (\d+)/m ? $1 : undef;
}

my $committed = 0;
foreach my $phase (@phases)
{
	my ($level, $secs) = @$phase;
	(my $escaped = $level) =~ s/ /\\ /g;
	local $ENV{PGOPTIONS} = "-c default_transaction_isolation=$escaped";
	my ($cout, $cerr, $rout, $rerr) = ('', '', '', '');
	my $clients = IPC::Run::start(
		[
			'pgbench', @conn, '-c', '8', '-j', '2', '-T', $secs,
			'--max-tries', '1000', '-D', "t0=$t0", '-D', "rows=$rows",
			'-f', "$edge\@5", '-f', "$any\@5"
		],
		'>', \$cout, '2>', \$cerr);
	my $runner = IPC::Run::start(
		[ 'pgbench', @conn, '-c', '1', '-T', $secs, '--max-tries', '1000', '-f', $run ],
		'>', \$rout, '2>', \$rerr);
	$clients->finish;
	my $clients_rc = $?;
	$runner->finish;
	my $runner_rc = $?;

	is($clients_rc, 0, "$level: pgbench clients exit 0") or diag($cerr);
	is($runner_rc, 0, "$level: pgbench runner exits 0 (no run failed)") or diag($rerr);
	my $done = count_of($cout, 'number of transactions actually processed');
	my $failed = count_of($cout, 'number of failed transactions') // 0;
	my $retried = count_of($cout, 'number of transactions retried') // 0;
	my $runs = count_of($rout, 'number of transactions actually processed');
	ok(defined $done && $done > 0, "$level: clients committed transactions")
	  or diag($cout);
	is($failed, 0, "$level: no client transaction failed after retries");
	note("$level: $done transactions, $retried retried, $runs runs");
	$committed += $done // 0;

	my ($sum, $count, $ids, $in_both, $archived) = split /\|/,
	  $node->safe_psql(
		'postgres', q{
SELECT sum(n), count(*), count(DISTINCT id),
	   (SELECT count(*) FROM c_current JOIN c_archive USING (id)),
	   (SELECT count(*) FROM c_archive)
FROM c});
	is($sum, $committed, "$level: sum of the counters = committed transactions ($committed)");
	is($count, $rows, "$level: row count unchanged");
	is($ids, $rows, "$level: no key twice");
	is($in_both, 0, "$level: no row in both tables");
	ok($archived > 0, "$level: runs moved rows ($archived archived)");
}

is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE error IS NOT NULL) FROM archive_cluster_runs}),
	'0', 'no run recorded an error');

# the tables and every index are sound
amcheck_clean($node, 'postgres',
	[ 'verify_heapam(%s) finds nothing', 'bt_index_check(%s, heapallindexed) passes' ],
	'c_current', 'c_archive');

$node->stop;
done_testing();
