# The archive's indexes after compactions (issue 38, 7): a compaction writes
# its rows' index entries beside the old ones, splitting leaf pages that the
# VACUUM after it leaves half empty.  The worker measures the leaf pages'
# fill after each compaction it makes (archive_cluster_index_fill(), over the
# index's fillfactor) and rebuilds an index below
# archive_cluster.index_rebuild_fill with REINDEX INDEX CONCURRENTLY.
# - a table archived in ten runs; the worker compacts it, then rebuilds its
#   sparse indexes: each gets a new OID under its old name, its leaf pages
#   are about as full as a fresh build's, no invalid index is left, the rows
#   are the same, the log says so;
# - a rebuild that fails (canceled while it waits for an older snapshot) is
#   logged (no failure of the table: no backoff), and the invalid index it
#   left is dropped (DROP INDEX CONCURRENTLY), the archive's indexes as
#   before.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'rebuild',
	'archive_cluster.naptime' => 1,
	'archive_cluster.enabled' => 'off',
	'archive_cluster.compaction_threshold' => 0.01,
	'archive_cluster.index_rebuild_fill' => 0.95,
	autovacuum => 'off');

$node->safe_psql('postgres',
	"CREATE EXTENSION archive_cluster;\n"
	  . table_sql('t', columns => 'pad text NOT NULL', batch_rows => 5000));

# $n rows more, old enough to be archived, archived by a run of their own
sub grow_and_run
{
	my ($from, $n) = @_;
	my $to = $from + $n - 1;
	$node->safe_psql(
		'postgres', qq{
INSERT INTO t SELECT g, g % 500, now() - interval '3 days' + g * interval '1 ms', repeat('p', g % 50)
FROM generate_series($from, $to) g;
SELECT archive_cluster_run('t', force => true);
});
}

sub state_of
{
	return tier_state($node, 'postgres', 't');
}

# the archive's indexes: name, OID, validity and fill, one per line
sub indexes
{
	return $node->safe_psql(
		'postgres', q{
SELECT c.relname || ' ' || i.indexrelid || ' ' || i.indisvalid || ' ' ||
	   CASE WHEN i.indisvalid THEN round(archive_cluster_index_fill(i.indexrelid, 100000)::numeric, 2)::text END
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 't_archive'::regclass ORDER BY c.relname});
}

# workers off, and none left at work
sub workers_off
{
	my ($what) = @_;
	alter_system($node, 'archive_cluster.enabled' => 'off');
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'archive_cluster worker'"),
		$what);
}

grow_and_run($_ * 5000 + 1, 5000) for 0 .. 9;
my $rows = state_of();
my %before = map { (split / /)[0] => [ split / / ] } split /\n/, indexes();
note("before: " . join('; ', map { join(' ', @{ $before{$_} }) } sort keys %before));

# --- the worker compacts, then rebuilds the sparse indexes
my $log_offset = -s $node->logfile;
alter_system($node, 'archive_cluster.enabled' => 'on');
ok( $node->wait_for_log(
		qr/archive_cluster: rebuilt index "public\.t_archive_cid_ts_idx" of the archive of "t"/,
		$log_offset),
	'the worker rebuilt the (cid, ts) index of the archive after compacting it');
workers_off('the rebuilds are over');
is($node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM archive_cluster_runs WHERE kind = 'compaction' AND error IS NULL AND started_by = 'worker'"),
	't', 'the worker compacted the archive');
my %after = map { (split / /)[0] => [ split / / ] } split /\n/, indexes();
note("after: " . join('; ', map { join(' ', @{ $after{$_} }) } sort keys %after));
is_deeply([ sort keys %after ], [ sort keys %before ], 'the archive has the same indexes by name');
isnt($after{t_archive_cid_ts_idx}[1], $before{t_archive_cid_ts_idx}[1],
	't_archive_cid_ts_idx: a new index (OID) under the same name');
foreach my $name (sort keys %after)
{
	is($after{$name}[2], 'true', "$name is valid");
	next unless $after{$name}[1] ne $before{$name}[1];
	cmp_ok($after{$name}[3], '>=', 0.85, "$name rebuilt: its leaf pages are about as full as a fresh build's");
}
is(state_of(), $rows, 'the same rows');

# --- a rebuild that fails: canceled while it waits for an older snapshot
grow_and_run($_ * 5000 + 1, 5000) for 10 .. 14;
my %before2 = map { (split / /)[0] => [ split / / ] } split /\n/, indexes();
my $snap = $node->background_psql('postgres');
$snap->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$snap->query_safe('SELECT count(*) FROM pg_class');
$log_offset = -s $node->logfile;
alter_system($node, 'archive_cluster.enabled' => 'on');
my $waiting = q{SELECT pid FROM pg_stat_progress_create_index
WHERE command = 'REINDEX CONCURRENTLY' AND phase = 'waiting for old snapshots'};
ok($node->poll_query_until('postgres', "SELECT EXISTS ($waiting)"),
	'a rebuild waits for the older snapshot');
my $pid = $node->safe_psql('postgres', $waiting);
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
ok( $node->wait_for_log(
		qr/archive_cluster: dropped index "public\.t_archive_\w+_ccnew\d*" that a failed rebuild left/,
		$log_offset),
	'the worker dropped the invalid index the canceled rebuild left');
$snap->query_safe('COMMIT');
$snap->quit;
workers_off('the worker is done with the indexes');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_index WHERE indrelid = 't_archive'::regclass AND NOT indisvalid"),
	'0', 'no invalid index is left on the archive');
ok($node->log_contains(qr/WARNING:  canceling statement due to user request\n.*CONTEXT:  archive run of table "t"/, $log_offset),
	'the canceled rebuild is logged');
is($node->safe_psql('postgres', "SELECT count(*) FROM archive_cluster_runs WHERE error IS NOT NULL"),
	'0', 'it is no failure of the table: its runs and compactions go on');
my %after2 = map { (split / /)[0] => [ split / / ] } split /\n/, indexes();
is_deeply([ sort keys %after2 ], [ sort keys %before2 ], 'the archive has the same indexes by name');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '75000', 'every row is there');

$node->stop;
done_testing();
