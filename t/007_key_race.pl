# The identity key stays unique across <t>_current and <t>_archive when two
# transactions write the same new key at the same time into different
# tables: one changes the key of an archived row (the row stays in
# t_archive), the other inserts the key through the view or changes the key
# of a current row (t_current).  Each table's unique index cannot see the
# other table, so the trigger's cross-table check must also see the other
# transaction's uncommitted row (wait for it, or fail).  Whatever the second
# writer does (wait then fail, fail at once with 23505 or 40001), the key
# must end up in one table only.  The assertions hold for any correct
# behaviour; only the outcome is checked.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node('keyrace', 'archive_cluster.enabled' => 'off');

$node->safe_psql('postgres', 'CREATE EXTENSION archive_cluster');

# a registered table: ids 1-100 archived, 101-200 in the current table
sub make_table
{
	my ($t) = @_;
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $t (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL, n int NOT NULL DEFAULT 0);
INSERT INTO $t SELECT g, g % 10, now() - interval '2 days', 0 FROM generate_series(1, 100) g;
SELECT archive_cluster_register('$t', '{cid,ts}', 'ts', batch_rows => 10);
SELECT rows_moved FROM archive_cluster_run('$t', force => true);
INSERT INTO $t SELECT g, g % 10, now(), 0 FROM generate_series(101, 200) g;
});
}

my %writes = (
	archive_key => 'UPDATE %s SET id = 9999 WHERE id = 50',     # an archived row takes the key
	current_key => 'UPDATE %s SET id = 9999 WHERE id = 150',    # a current row takes the key
	insert      => 'INSERT INTO %s VALUES (9999, 1, now(), 0)', # a new row in the current table
);
my $i = 0;
foreach my $case (
	[ 'archive_key', 'insert' ],
	[ 'insert', 'archive_key' ],
	[ 'archive_key', 'current_key' ],
	[ 'current_key', 'archive_key' ])
{
	my ($first, $second) = @$case;
	my $t = 'race' . ++$i;
	make_table($t);
	my $s1 = $node->background_psql('postgres', on_error_stop => 0);
	my $s2 = $node->background_psql('postgres', on_error_stop => 0);
	$s1->query_safe('BEGIN');
	$s1->query_safe(sprintf($writes{$first}, $t));
	my $pid2 = $s2->query_safe('SELECT pg_backend_pid()');
	$s2->query_safe('BEGIN');
	# the second write may wait for the first transaction: do not wait for
	# it, but make sure it has done its work or is waiting before the first
	# one commits
	$s2->query_until(qr/sent/, "\\echo sent\n" . sprintf($writes{$second}, $t) . ";\n");
	ok( $node->poll_query_until(
			'postgres', qq{
SELECT state LIKE 'idle in transaction%' OR wait_event_type = 'Lock' FROM pg_stat_activity
WHERE pid = $pid2 AND query LIKE '%9999%'}),
		"$first / $second: the second write is done or waiting");
	$s1->query_safe('COMMIT');
	# psql runs this after the write (it reads its input in order)
	$s2->query('COMMIT');
	$s1->quit;
	$s2->quit;
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (SELECT id FROM ${t}_current WHERE id = 9999 UNION ALL SELECT id FROM ${t}_archive WHERE id = 9999) x}),
		'1',
		"$first, then $second of one key, concurrently: the key is in one table only");
	is( $node->safe_psql('postgres',
			"SELECT count(*) - count(DISTINCT id) + (SELECT count(*) FROM ${t}_current JOIN ${t}_archive USING (id)) FROM $t"),
		'0',
		"$first / $second: no key twice, no row in both tables");
}

$node->stop;
done_testing();
