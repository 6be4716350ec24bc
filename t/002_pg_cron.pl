# The pg_cron recipe of docs/user-guide.md: a job that runs
# SELECT archive_cluster_run() archives a due table and, in the same call,
# passes the closed partition of a registered partitioned table (no
# argument: every registered table and partitioned table the job's user
# owns).  The background worker is off, so only pg_cron can have done it.
# pg_cron schedules by the minute: this test waits up to about two minutes.
#
# The partitioned table "ev": one closed partition (2020, by its bound) of
# 12,000 rows interleaved over 60 customers (each customer's rows on about
# every page), an open one with 60 hot rows, and an empty one for next
# year.  One closed partition, so that the first call serves it (a call
# passes one partition per partitioned table unless max_batches says more);
# autovacuum off on it, so that no VACUUM makes a tail pass due meanwhile.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'cron',
	shared_preload_libraries => 'archive_cluster, pg_cron',
	'archive_cluster.enabled' => 'off',
	'cron.database_name' => 'postgres',
	'cron.use_background_workers' => 'on',
	max_worker_processes => 16);

$node->safe_psql('postgres',
	    "CREATE EXTENSION pg_cron;\n"
	  . "CREATE EXTENSION archive_cluster;\n"
	  . table_sql('pay',
		columns => 'amount numeric',
		rows => "SELECT g, g % 500, now() - interval '3 hours' - g * interval '1 ms', g FROM generate_series(1, 30000) g",
		batch_rows => 10000));
$node->safe_psql(
	'postgres', q{
CREATE TABLE ev (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL,
	PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts);
CREATE INDEX ev_cid_ts ON ev (cid, ts);
CREATE TABLE ev_2020 PARTITION OF ev FOR VALUES FROM ('2020-01-01') TO ('2021-01-01')
	WITH (autovacuum_enabled = off);
CREATE TABLE ev_now PARTITION OF ev FOR VALUES FROM ('2021-01-01') TO (now() + interval '1 day');
CREATE TABLE ev_next PARTITION OF ev FOR VALUES FROM (now() + interval '1 day') TO (MAXVALUE);
INSERT INTO ev SELECT g, g % 60, timestamptz '2020-06-01' + g * interval '1 min', repeat(md5(g::text), 3)
FROM generate_series(1, 12000) g;
INSERT INTO ev SELECT 100000 + g, g % 60, now() - interval '5 min', 'hot' FROM generate_series(1, 60) g;
SELECT archive_cluster_register('ev', cluster_by => '{cid,ts}', age_column => 'ts',
	hot_window => '1 hour', mode => 'partitioned');
});
my $before = tier_state($node, 'postgres', 'pay');

# "count:md5" of the rows of $rel (all columns, in id order)
my $rows_sql = sub {
	my ($rel) = @_;
	return "SELECT count(*) || ':' || md5(string_agg(r::text, ',' ORDER BY id)) FROM $rel r";
};
# the average number of heap pages that a customer's rows are on in $leaf
my $ppk_sql = sub {
	my ($leaf) = @_;
	return
	  "SELECT round(avg(pages), 1) FROM (SELECT cid, count(DISTINCT (ctid::text::point)[0]) AS pages FROM $leaf GROUP BY cid) k";
};
# the rows of $leaf, read in ctid order, are in (cid, ts) order
my $ordered_sql = sub {
	my ($leaf) = @_;
	return
	  "SELECT bool_and(o) FROM (SELECT coalesce((cid, ts) >= lag((cid, ts)) OVER (ORDER BY ctid), true) AS o FROM $leaf) x";
};
# the leaves: "leaf closed passes" of each, in name order
my $leaves_sql =
  q{SELECT string_agg(leaf || ' ' || closed || ' ' || passes, ', ' ORDER BY leaf::text) FROM archive_cluster_partitions('ev')};

my $ev_rows = $node->safe_psql('postgres', $rows_sql->('ev_2020'));
like($ev_rows, qr/^12000:[0-9a-f]{32}$/, 'ev_2020: 12,000 rows');
my $all_rows = $node->safe_psql('postgres', $rows_sql->('ev'));
like($all_rows, qr/^12060:/, 'ev: 12,060 rows');
my $ppk = $node->safe_psql('postgres', $ppk_sql->('ev_2020'));
cmp_ok($ppk, '>=', 50, "ev_2020: each customer's rows on many pages ($ppk)");
is($node->safe_psql('postgres', $ordered_sql->('ev_2020')), 'f', 'ev_2020: rows not in cluster order');
is($node->safe_psql('postgres', $leaves_sql),
	'ev_2020 true 0, ev_next false 0, ev_now false 0',
	'ev: one closed partition, none passed');

$node->safe_psql('postgres',
	"SELECT cron.schedule('archive', '* * * * *', 'SELECT archive_cluster_run()')");

my $timeout = $PostgreSQL::Test::Utils::timeout_default;
$PostgreSQL::Test::Utils::timeout_default = 200 if $timeout < 200;
ok( $node->poll_query_until(
		'postgres', 'SELECT count(*) = 30000 FROM pay_archive'),
	'the pg_cron job archived the table');
is( $node->safe_psql(
		'postgres',
		"SELECT started_by || ' ' || rows_moved FROM archive_cluster_runs WHERE relation = 'pay'::regclass"
	),
	'pg_cron 30000',
	'the run is recorded as started by pg_cron');
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM cron.job_run_details WHERE status = 'succeeded'"),
	'pg_cron reports the job as succeeded');
is(tier_state($node, 'postgres', 'pay'), $before, 'same rows after the run');

# the partitioned table: passed by the same job (in the same call as the
# table, or in the next one at the latest)
ok( $node->poll_query_until(
		'postgres',
		"SELECT passes > 0 FROM archive_cluster_partitions('ev') WHERE leaf = 'ev_2020'::regclass"),
	'the pg_cron job passed the closed partition');
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(kind || ' ' || started_by || ' ' || rows_moved || ' ' || rows_busy || ' '
			|| (detail ~ '^leaf public\.ev_2020 \(first pass\): \d+ pages; ') || ' ' || (error IS NULL), ', ')
		  FROM archive_cluster_runs WHERE relation = 'ev'::regclass}),
	'pass pg_cron 12000 0 true true',
	'one pass recorded: kind pass, started by pg_cron, every row of ev_2020, none busy, no error');
is($node->safe_psql('postgres', $leaves_sql),
	'ev_2020 true 1, ev_next false 0, ev_now false 0',
	'only the closed partition was passed, once');
is( $node->safe_psql(
		'postgres',
		q{SELECT rows_rewritten || ' ' || (settled_at IS NOT NULL) || ' ' || resumes FROM archive_cluster_partitions('ev') WHERE leaf = 'ev_2020'::regclass}),
	'12000 true false',
	'ev_2020: its pass went through to the end');
is($node->safe_psql('postgres', $rows_sql->('ev_2020')), $ev_rows,
	'ev_2020: the same rows after the pass (count, md5)');
is($node->safe_psql('postgres', $rows_sql->('ev')), $all_rows, 'ev: the same rows after the pass');
my $ppk_after = $node->safe_psql('postgres', $ppk_sql->('ev_2020'));
cmp_ok($ppk_after * 10, '<', $ppk,
	"ev_2020: pages per customer $ppk before the pass, $ppk_after after");
is($node->safe_psql('postgres', $ordered_sql->('ev_2020')), 't',
	'ev_2020: rows in cluster order, page after page');
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM ev_now WHERE pad = 'hot'"),
	'60', 'the open partition keeps its rows');

$node->stop;
done_testing();
