# Compaction of the archive: by the background worker, when the fragmentation
# it measures is due (archive_cluster.compaction_threshold), then a VACUUM of
# the archive; and crashes in the middle of a compaction.
#
# A table archived in ten runs of 5,000 rows over 500 customers (ten islands
# per customer).  With archive_cluster.compaction off, the worker archives
# but never compacts; on, it compacts the archive once, records it
# (kind compaction, started by the worker), vacuums the archive, and then
# finds nothing due.  A manual compaction waits before its commit and its
# backend is killed (SIGKILL), then the server is shut down immediately in
# the same place, then right after a compaction committed: each time, after
# the restart, the same rows (count, checksum, none in both tiers), the
# loose set as before the compaction or as it left it, amcheck clean, and the
# next compaction keeps every row once.  Table mode: the worker compacts too.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'compaction',
	'archive_cluster.naptime' => 1,
	'archive_cluster.compaction' => 'off',
	restart_after_crash => 'on',
	autovacuum => 'off');

$node->safe_psql('postgres',
	    "CREATE EXTENSION archive_cluster;\n"
	  . "CREATE EXTENSION amcheck;\n"
	  . table_sql('t', columns => 'pad text NOT NULL, big text', batch_rows => 5000));

# $n rows more, old enough to be archived (TOASTed values now and then)
sub grow
{
	my ($from, $n) = @_;
	my $to = $from + $n - 1;
	$node->safe_psql(
		'postgres', qq{
INSERT INTO t SELECT g, g % 500, now() - interval '3 days' + g * interval '1 ms', repeat('p', g % 150),
	CASE WHEN g % 5000 = 0 THEN repeat(md5(g::text), 300) END
FROM generate_series($from, $to) g;
});
}

# count:checksum:distinct ids:rows in both tiers
sub state_of
{
	return tier_state($node, 'postgres', 't', with => [qw(ids in_both)]);
}

sub loose
{
	return $node->safe_psql('postgres',
		"SELECT blocks FROM archive_cluster_loose WHERE relation = 't'::regclass");
}

sub compactions
{
	my ($by) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM archive_cluster_runs WHERE kind = 'compaction' AND error IS NULL"
		  . " AND started_by = '$by'");
}

# --- the worker archives, in ten runs, but does not compact while it is off
for my $b (0 .. 9)
{
	grow($b * 5000 + 1, 5000);
	$node->safe_psql('postgres', 'ANALYZE t_current');
	ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM t_current"),
		"run $b: the worker archived the batch");
}
my $before = state_of();
like($before, qr/^50000:-?\d+:50000:0$/, '50,000 rows archived, none in both tiers');
is($node->safe_psql('postgres',
		"SELECT compactable_pages_per_key > 3 FROM archive_cluster_fragmentation('t') WHERE tier = 'archive'"),
	't', 'ten islands per customer: compaction would save more than 3 pages per customer');
sleep 3;
is(compactions('worker'), '0', 'compaction off: the worker did not compact');

# --- on: the worker compacts once, then vacuums the archive
my $log_offset = -s $node->logfile;
reload_with($node, 'archive_cluster.compaction' => 'on');
$node->wait_for_log(qr/archive_cluster: compacted the archive of "t": 50000 rows rewritten/,
	$log_offset);
ok($node->poll_query_until('postgres',
		"SELECT vacuum_count > 0 FROM pg_stat_user_tables WHERE relid = 't_archive'::regclass"),
	'the worker vacuumed the archive after compacting it');
is(state_of(), $before, 'after the worker compacted: same rows');
is(compactions('worker'), '1', 'recorded: one compaction by the worker');
is($node->safe_psql('postgres',
		"SELECT compactable_pages_per_key < 1 FROM archive_cluster_fragmentation('t') WHERE tier = 'archive'"),
	't', 'after it: less than a page per customer left to gain');
sleep 3;
is(compactions('worker'), '1', 'nothing due: no second compaction');
amcheck_clean($node, 'postgres', 'after the worker compacted', 't_archive');

# --- crashes in the middle of a manual compaction (the worker stays away)
reload_with($node, 'archive_cluster.enabled' => 'off');
for my $b (10 .. 11)
{
	grow($b * 5000 + 1, 5000);
	$node->safe_psql('postgres', "SELECT archive_cluster_run('t', force => true)");
}
$before = state_of();
my $loose_before = loose();

# a compaction in its own session, waiting at $name; returns its pid and sessions
sub paused_compaction
{
	my ($name) = @_;
	return start_paused($node, 'postgres', $name,
		"SELECT * FROM archive_cluster_compact('t', force => true)",
		"$name: the compaction waits at its phase");
}

sub after_restart
{
	my ($what) = @_;
	is(state_of(), $before, "$what: same count and checksum, no row in both tiers");
	is(loose(), $loose_before, "$what: the loose set as before the compaction");
	amcheck_clean($node, 'postgres', $what, 't_archive');
}

foreach my $name ('deleted', 'before_commit')
{
	my ($pid, $holder, $runner) = paused_compaction($name);
	is(state_of(), $before, "$name: others see every row once meanwhile");
	crash_backend($node, 'postgres', $pid, "kill -9 at $name", $holder, $runner);
	after_restart("kill -9 at $name");
}

{
	my ($pid, $holder, $runner) = paused_compaction('before_commit');
	restart_immediate($node, $holder, $runner);
	after_restart('immediate shutdown before commit');
}

# a compaction that committed, then a crash (its WAL replayed)
is($node->safe_psql('postgres', "SELECT status FROM archive_cluster_compact('t', force => true)"),
	'compacted', 'the next compaction completes');
my $loose_after = loose();
isnt($loose_after, $loose_before, 'it replaced the loose set');
restart_immediate($node);
is(state_of(), $before, 'crash after a committed compaction: same rows');
is(loose(), $loose_after, 'crash after a committed compaction: its loose set');
amcheck_clean($node, 'postgres', 'crash after a committed compaction', 't_archive');
$node->safe_psql('postgres', 'VACUUM t_archive');
is($node->safe_psql('postgres', "SELECT status FROM archive_cluster_compact('t', force => true)"),
	'compacted', 'and one more after VACUUM');
is(state_of(), $before, 'every row once');
amcheck_clean($node, 'postgres', 'after VACUUM and one more compaction', 't_archive');

# --- table mode: the worker compacts too
$node->safe_psql('postgres',
	table_sql('tm', columns => 'pad text NOT NULL', batch_rows => 2000, mode => 'table') . q{
DO $$
BEGIN
	FOR b IN 0..5 LOOP
		INSERT INTO tm SELECT g, g % 200, now() - interval '3 days' + g * interval '1 ms', repeat('q', g % 120)
		FROM generate_series(b * 2000 + 1, b * 2000 + 2000) g;
		PERFORM archive_cluster_run('tm', force => true);
	END LOOP;
END $$;
});
my $tm_before = tier_state($node, 'postgres', 'tm');
$log_offset = -s $node->logfile;
reload_with($node, 'archive_cluster.enabled' => 'on');
$node->wait_for_log(qr/archive_cluster: compacted the archive of "tm": 12000 rows rewritten/,
	$log_offset);
is(tier_state($node, 'postgres', 'tm'), $tm_before, 'table mode: the worker compacted, same rows');
my ($ret, $out, $err) = $node->psql('postgres', "INSERT INTO tm VALUES (42, 1, now(), 'dup')");
like($err, qr/duplicate key value violates unique constraint "tm_pkey"/,
	'table mode: the primary key still holds across the tiers');

$node->stop;
done_testing();
