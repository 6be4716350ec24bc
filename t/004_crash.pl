# Crashes in the middle of a run.  A manual run (in batches of 10,000 rows,
# several per transaction) waits at each of its phases (test hook
# archive_cluster.debug_pause: after its run lock, after its delete from
# t_current, before its commit), and its backend is killed with SIGKILL (the
# postmaster then restarts every process: restart_after_crash = on); then the
# same with an immediate shutdown (pg_ctl -m immediate) instead, and one
# right after a run committed (its WAL replayed at start-up).  Each time,
# after the restart:
#   count and checksum of the view are those before the run,
#   no row is in both tables, and the rows are where the outcome says,
#   amcheck: verify_heapam() of both tables reports nothing and (not
#     where test/pg.sh says the installation has no amcheck:
#     ARCHIVE_CLUSTER_NO_AMCHECK=1, PostgreSQL 16 from the pgserver wheel)
#     bt_index_check(heapallindexed => true) passes for each of their indexes,
#   the next run completes and keeps every row once.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'crash',
	'archive_cluster.enabled' => 'off',
	restart_after_crash => 'on',
	autovacuum => 'off');
my $amcheck = !$ENV{ARCHIVE_CLUSTER_NO_AMCHECK};
diag('no amcheck in this installation: its checks are left out') unless $amcheck;
$node->safe_psql('postgres', 'CREATE EXTENSION amcheck') if $amcheck;

# 20,000 rows archived, 40,000 due in t_current, 5,000 hot (ts in the future)
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION archive_cluster;
CREATE TABLE t (id bigint PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL, big text);
CREATE INDEX ON t (cid, ts);
CREATE UNIQUE INDEX t_pad_id ON t (pad, id);
INSERT INTO t SELECT g, g % 500, now() - interval '3 days' + g * interval '1 ms', 'p' || (g % 97),
	CASE WHEN g % 5000 = 0 THEN repeat(md5(g::text), 300) END
FROM generate_series(1, 20000) g;
SELECT archive_cluster_register('t', cluster_by => '{cid,ts}', age_column => 'ts',
								hot_window => '1 hour', batch_rows => 10000);
SELECT rows_moved FROM archive_cluster_run('t', force => true);
INSERT INTO t SELECT g, g % 500, now() - interval '2 days' + g * interval '1 ms', 'p' || (g % 97),
	CASE WHEN g % 5000 = 0 THEN repeat(md5(g::text), 300) END
FROM generate_series(20001, 60000) g;
INSERT INTO t SELECT g, g % 500, now() + interval '1 day', 'hot', NULL FROM generate_series(60001, 65000) g;
});

# count:checksum:distinct ids:rows in both tiers
sub state_of
{
	return tier_state($node, 'postgres', 't', with => [qw(ids in_both)]);
}

sub tiers
{
	return tier_counts($node, 'postgres', 't');
}

my $before = state_of();
like($before, qr/^65000:-?\d+:65000:0$/, 'start: 65,000 rows, none in both tables');
is(tiers(), '45000/20000', 'start: 20,000 archived, 40,000 due, 5,000 hot');

# Starts a run in its own session that waits at $name; returns the backend
# pid of the run and the two sessions (the holder of the lock, the run).
sub paused_run
{
	my ($name) = @_;
	return start_paused($node, 'postgres', $name,
		"SELECT * FROM archive_cluster_run('t', force => true)",
		"$name: the run waits at its phase", 'SET archive_cluster.max_batch_rows = 10000');
}

sub after_restart
{
	my ($what, $expect_tiers) = @_;
	is(state_of(), $before, "$what: same count and checksum, no row in both tables");
	is(tiers(), $expect_tiers, "$what: rows where the outcome says");
	amcheck_clean($node, 'postgres', $what, 't_current', 't_archive') if $amcheck;
}

foreach my $name ('locked', 'deleted', 'before_commit')
{
	my ($pid, $holder, $runner) = paused_run($name);
	if ($name ne 'locked')
	{
		# others do not see the run's uncommitted work
		is(tiers(), '45000/20000', "$name: the run's work is not visible to others");
	}
	crash_backend($node, 'postgres', $pid, "kill -9 at $name", $holder, $runner);
	after_restart("kill -9 at $name", '45000/20000');
}

# an immediate shutdown while the run waits before its commit
{
	my ($pid, $holder, $runner) = paused_run('before_commit');
	restart_immediate($node, $holder, $runner);
	after_restart('immediate shutdown before commit', '45000/20000');
}

# the next run completes; then a crash right after it committed: its WAL is
# replayed (no checkpoint in between)
is( $node->safe_psql('postgres',
		"SET archive_cluster.max_batch_rows = 10000; SELECT status || ' ' || rows_moved || ' ' || batches FROM archive_cluster_run('t', force => true)"
	),
	'archived 40000 4',
	'the next run completes: 40,000 rows in 4 batches');
is(state_of(), $before, 'after the run: same rows, none in both tables');
restart_immediate($node);
after_restart('immediate shutdown after a committed run', '5000/60000');

# everything works after all that: DML through the view and another run
$node->safe_psql(
	'postgres', q{
INSERT INTO t SELECT g, 1, now() - interval '2 days', 'late', NULL FROM generate_series(70001, 70100) g;
UPDATE t SET pad = pad || '+' WHERE id IN (1, 30000, 60001);
DELETE FROM t WHERE id = 2;
});
is($node->safe_psql('postgres', "SELECT rows_moved FROM archive_cluster_run('t', force => true)"),
	'100', 'a later run moves the new due rows');
is( $node->safe_psql('postgres',
		'SELECT count(*) || \':\' || count(DISTINCT id) || \':\' || (SELECT count(*) FROM t_current c JOIN t_archive a USING (id)) FROM t'
	),
	'65099:65099:0',
	'all rows once after DML and the run');
amcheck_clean($node, 'postgres', 'at the end', 't_current', 't_archive') if $amcheck;

$node->stop;
done_testing();
