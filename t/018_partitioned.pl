# Partitioned tables (mode => 'partitioned'): crashes in the middle of a
# pass over a leaf, a dump and a restore, and leaves dropped or created
# while the table is registered.
#
# A table partitioned by day on ts, three closed leaves of 20,000 rows each
# interleaved over 200 customers (a pad column, now and then a TOASTed
# value; a primary key, the (cid, ts) index and an index on pad), and an
# open leaf, registered once.
#   Crashes: a pass over a leaf waits between two pages (test hook
#     archive_cluster.debug_pause = 'leaf_page': while another session holds
#     pg_advisory_lock(1094930497, 7)), with rows deleted and at least one
#     page written; after a CHECKPOINT (its uncommitted pages on disk) its
#     backend is killed with SIGKILL (the postmaster then restarts every
#     process: restart_after_crash = on), and, over another leaf, after ten
#     pages and with its WAL flushed (pg_switch_wal(), replayed at start-up),
#     the server is shut down immediately and started again.  Each time, after the restart: the leaf holds the same rows
#     (count and md5 of all of them in id order), amcheck finds nothing
#     (verify_heapam() of the leaf and of its TOAST table,
#     bt_index_check(heapallindexed) of each of their indexes; left out where
#     test/pg.sh says the installation has no amcheck:
#     ARCHIVE_CLUSTER_NO_AMCHECK=1), nothing is recorded for the leaf, and a
#     new pass then goes through (every row rewritten, none busy, no giving
#     way), keeps the rows and leaves each customer on far fewer pages.
#   pg_dump -Fc and pg_restore into a new database (CREATE EXTENSION from
#     the dump): the registration is restored and names the restored table,
#     the passes' state (archive_cluster_leaves) is not, the rows are the
#     same, and passes over closed leaves work in the restored database.
#   A passed leaf dropped while registered: its state goes with it, the
#     others' stays; a partition created afterwards is listed by
#     archive_cluster_partitions() and passed with no call in between.
#   kill -9 in a tail pass: a leaf passed once and vacuumed (its rows in the
#     back half of the file, which VACUUM cannot truncate) gets a tail pass
#     from archive_cluster_run(), held after its first page (it deletes rows
#     of the tail only, none of the first customer's, and writes below the
#     tail: the file does not grow) and its backend killed: the same rows,
#     amcheck clean, nothing recorded; after a VACUUM a tail pass goes
#     through (recorded as one), and the VACUUM after it truncates the file
#     to about the leaf's size before its passes.
#   A crash after a whole pass: its transaction open (its WAL flushed), an
#     immediate shutdown: aborted at the restart, as above; committed, no
#     checkpoint since: the restart replays it, the rows the same and still
#     clustered, amcheck clean, the pass recorded.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_node(
	'partitioned',
	'archive_cluster.enabled' => 'off',
	restart_after_crash => 'on',
	autovacuum => 'off');
my $amcheck = !$ENV{ARCHIVE_CLUSTER_NO_AMCHECK};
diag('no amcheck in this installation: its checks are left out') unless $amcheck;

# The extension, the partitioned table and its leaves, registered once, and
# the rows: per closed leaf (day d), ids d * 100000 + 1 .. + 20000, one
# every 4 s, cid = g % 200 (so each customer's rows are on ~100 pages), a
# TOASTed value every 1,000 rows; 100 hot rows in the open leaf
my $setup_sql = q{
CREATE EXTENSION archive_cluster;
CREATE TABLE pt (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL,
	big text, PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts);
CREATE INDEX pt_cid_ts ON pt (cid, ts);
CREATE INDEX pt_pad ON pt (pad);
CREATE TABLE pt_d1 PARTITION OF pt FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE pt_d2 PARTITION OF pt FOR VALUES FROM ('2020-01-02') TO ('2020-01-03');
CREATE TABLE pt_d3 PARTITION OF pt FOR VALUES FROM ('2020-01-03') TO ('2020-01-04');
CREATE TABLE pt_now PARTITION OF pt FOR VALUES FROM ('2020-01-04') TO (MAXVALUE);
ALTER TABLE pt ALTER COLUMN big SET STORAGE EXTERNAL;
SELECT archive_cluster_register('pt', ARRAY['cid','ts'], 'ts', '1 hour', mode => 'partitioned');
INSERT INTO pt SELECT d * 100000 + g, g % 200,
	timestamptz '2020-01-01' + (d - 1) * interval '1 day' + g * interval '4 s',
	repeat(md5((d * 100000 + g)::text), 3),
	CASE WHEN g % 1000 = 0 THEN repeat(md5(g::text), 100) END
FROM generate_series(1, 3) d, generate_series(1, 20000) g;
INSERT INTO pt SELECT 900000 + g, g % 200, now() - interval '5 min', 'hot', NULL
FROM generate_series(1, 100) g;
};

$node->safe_psql('postgres', $setup_sql . ($amcheck ? "CREATE EXTENSION amcheck;\n" : ''));

# "count:md5" of the rows of $rel (all columns, in id order)
sub rows_of
{
	my ($db, $rel) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) || ':' || md5(string_agg(r::text, ',' ORDER BY id)) FROM $rel r");
}

# the average number of pages that the rows of a customer are on in $leaf
sub pages_per_key
{
	my ($db, $leaf) = @_;
	return $node->safe_psql($db,
		"SELECT round(avg(pages), 1) FROM (SELECT cid, count(DISTINCT (ctid::text::point)[0]) AS pages FROM $leaf GROUP BY cid) k"
	);
}

# what a pass over $leaf returned: "rows_rewritten rows_busy gave_way resumed"
sub pass_leaf
{
	my ($db, $leaf) = @_;
	return $node->safe_psql($db,
		"SELECT rows_rewritten || ' ' || rows_busy || ' ' || gave_way || ' ' || resumed FROM archive_cluster_pass_leaf('$leaf')"
	);
}

# "passes rows_rewritten settled" of $leaf in archive_cluster_partitions()
sub leaf_record
{
	my ($db, $leaf) = @_;
	return $node->safe_psql($db,
		"SELECT passes || ' ' || rows_rewritten || ' ' || (settled_at IS NOT NULL) FROM archive_cluster_partitions('pt') WHERE leaf = '$leaf'::regclass"
	);
}

# amcheck of $leaf: the helper's checks of the leaf and its indexes, then
# verify_heapam() with check_toast and bt_index_check(heapallindexed) of the
# TOAST table's index
sub amcheck_leaf
{
	my ($db, $what, $leaf) = @_;
	return unless $amcheck;
	amcheck_clean($node, $db, $what, $leaf);
	is($node->safe_psql($db, "SELECT count(*) FROM verify_heapam('$leaf', check_toast => true)"),
		'0', "$what: verify_heapam($leaf, check_toast) reports nothing");
	my $toast_index = $node->safe_psql(
		$db, qq{
SELECT i.indexrelid::regclass FROM pg_class c JOIN pg_index i ON i.indrelid = c.reltoastrelid
WHERE c.oid = '$leaf'::regclass});
	my ($ret, $out, $err) = $node->psql($db,
		"SELECT bt_index_check('$toast_index', heapallindexed => true)");
	is($ret, 0, "$what: bt_index_check(TOAST index of $leaf, heapallindexed)") or diag($err);
}

# --- a pass held between two pages (archive_cluster.debug_pause = 'leaf_page')

# the backends that wait for the lock of the pause at leaf_page (the pass), or
# hold it
my $pause_locks =
  "SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
  . " AND classid = 1094930497 AND objid = 7 AND objsubid = 2";

# A pass over $leaf in a session of its own (on_error_stop off), held at its
# pause point after $pages pages ($sql: the statement that makes the pass,
# archive_cluster_pass_leaf('$leaf') when not given): one session holds the lock; for each page
# after the first, the other session asks for the lock, the one holding it
# lets it go, and the pass goes through its pause once (the lock manager
# grants the lock to the other session as soon as the pass lets it go, so
# the pass waits again at its next page).  One test that it waits at the
# pause point; returns the pid of its backend and the sessions.
sub start_paused_pass
{
	my ($db, $leaf, $pages, $what, $sql) = @_;
	$sql //= "SELECT * FROM archive_cluster_pass_leaf('$leaf')";
	my @holders = map { $node->background_psql($db) } (0, 1);
	my @holder_pids = map { $_->query_safe('SELECT pg_backend_pid()') =~ s/\s+//gr } @holders;
	$holders[0]->query_safe('SELECT pg_advisory_lock(1094930497, 7)');

	my $runner = $node->background_psql($db, on_error_stop => 0);
	my $pid = $runner->query_safe('SELECT pg_backend_pid()') =~ s/\s+//gr;
	my (undef, $failed) = $runner->query("SET archive_cluster.debug_pause = 'leaf_page'");
	ok(!$failed, "$what: the session of the pass accepts archive_cluster.debug_pause = 'leaf_page'")
	  or die "$what: cannot hold a pass between two pages: $runner->{stderr}";
	$runner->query_until(qr/started/, "\\echo started\n$sql;\n");
	my $waits = $node->poll_query_until($db,
		"SELECT count(*) = 1 FROM ($pause_locks AND pid = $pid AND NOT granted) w");
	for my $page (2 .. $pages)
	{
		last unless $waits;
		my ($from, $to) = (($page % 2), (($page + 1) % 2));
		$holders[$to]->query_until(qr/asking/,
			"\\echo asking\nSELECT pg_advisory_lock(1094930497, 7);\n");
		$waits = $node->poll_query_until($db,
			"SELECT count(*) = 1 FROM ($pause_locks AND pid = $holder_pids[$to] AND NOT granted) w");
		last unless $waits;
		$holders[$from]->query_safe('SELECT pg_advisory_unlock(1094930497, 7)');
		$waits = $node->poll_query_until($db,
			"SELECT count(*) = 2 FROM ($pause_locks AND ((pid = $holder_pids[$to] AND granted) OR (pid = $pid AND NOT granted))) w"
		);
	}
	ok($waits, "$what: the pass waits at its pause point after $pages page(s)");
	return ($pid, $runner, @holders);
}

# While the pass (backend $pid) waits: it deleted rows of $leaf and wrote
# pages, which others do not see
sub check_paused
{
	my ($db, $what, $leaf, $pid, $rows, $size) = @_;
	my $xid = $node->safe_psql($db, "SELECT backend_xid FROM pg_stat_activity WHERE pid = $pid");
	like($xid, qr/^\d+$/, "$what: the pass has a transaction id");
	my $done = $node->safe_psql($db,
		"SELECT rows_done FROM archive_cluster_progress WHERE pid = $pid AND kind = 'partition pass'");
	cmp_ok($done || 0, '>', 0, "$what: archive_cluster_progress shows rows written ($done)");
	my $deleted = $node->safe_psql($db, "SELECT count(*) FROM $leaf WHERE xmax = '$xid'");
	cmp_ok($deleted, '>=', $done || 1,
		"$what: the pass deleted rows ($deleted), at least those it wrote");
	cmp_ok($node->safe_psql($db, "SELECT pg_relation_size('$leaf') / 8192"),
		'>', $size / 8192, "$what: the pass wrote new pages into the leaf");
	is(rows_of($db, $leaf), $rows, "$what: others still see the same rows");
}

# After a crash in the middle of a pass over $leaf: the same rows, amcheck
# clean, nothing recorded; then a pass goes through, and the rows are the same
# and clustered
sub check_after_crash
{
	my ($db, $what, $leaf, $rows, $before_ppk) = @_;
	my ($count) = $rows =~ /^(\d+):/;
	is(rows_of($db, $leaf), $rows, "$what: the leaf holds the same rows (count, md5)");
	amcheck_leaf($db, $what, $leaf);
	is(leaf_record($db, $leaf), '0 0 false', "$what: no pass recorded for the leaf");
	is($node->safe_psql($db, "SELECT count(*) FROM archive_cluster_leaves WHERE leaf = '$leaf'::regclass"),
		'0', "$what: no row in archive_cluster_leaves");

	is(pass_leaf($db, $leaf), "$count 0 false false",
		"$what: a new pass rewrites every row, none busy, without giving way");
	is(rows_of($db, $leaf), $rows, "$what, then a pass: the same rows (count, md5)");
	my $after_ppk = pages_per_key($db, $leaf);
	cmp_ok($after_ppk * 10, '<', $before_ppk,
		"$what, then a pass: pages per customer $before_ppk before, $after_ppk after");
	is(leaf_record($db, $leaf), "1 $count true", "$what, then a pass: one settled pass recorded");
	amcheck_leaf($db, "$what, then a pass", $leaf);
}

# (a) kill -9 of the backend of a pass held after its first page
{
	my $what = 'kill -9 in a pass';
	my $rows = rows_of('postgres', 'pt_d1');
	like($rows, qr/^20000:[0-9a-f]{32}$/, 'pt_d1: 20,000 rows');
	my $ppk = pages_per_key('postgres', 'pt_d1');
	cmp_ok($ppk, '>=', 50, "pt_d1: each customer's rows on many pages ($ppk)");
	my $size = $node->safe_psql('postgres', "SELECT pg_relation_size('pt_d1')");
	my ($pid, @sessions) = start_paused_pass('postgres', 'pt_d1', 1, $what);
	check_paused('postgres', $what, 'pt_d1', $pid, $rows, $size);
	# the pass's uncommitted pages on disk: nothing of it to replay, its
	# transaction aborted by the crash
	$node->safe_psql('postgres', 'CHECKPOINT');
	crash_backend($node, 'postgres', $pid, $what, @sessions);
	check_after_crash('postgres', $what, 'pt_d1', $rows, $ppk);
}

# (b) an immediate shutdown while a pass waits after ten pages
{
	my $what = 'immediate shutdown in a pass';
	my $rows = rows_of('postgres', 'pt_d2');
	like($rows, qr/^20000:[0-9a-f]{32}$/, 'pt_d2: 20,000 rows');
	my $ppk = pages_per_key('postgres', 'pt_d2');
	my $size = $node->safe_psql('postgres', "SELECT pg_relation_size('pt_d2')");
	my ($pid, @sessions) = start_paused_pass('postgres', 'pt_d2', 10, $what);
	check_paused('postgres', $what, 'pt_d2', $pid, $rows, $size);
	# the pass's WAL flushed (no checkpoint): the start-up replays its deletes
	# and writes, and its transaction ends aborted
	my $switch = $node->safe_psql('postgres', 'SELECT pg_switch_wal()');
	is($node->safe_psql('postgres', "SELECT pg_current_wal_flush_lsn() >= '$switch'"),
		't', "$what: the pass's WAL is flushed");
	restart_immediate($node, @sessions);
	check_after_crash('postgres', $what, 'pt_d2', $rows, $ppk);
}

# the other leaves are untouched by all that
is(leaf_record('postgres', 'pt_d3'), '0 0 false', 'pt_d3: never passed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pt'), '60100', 'pt: every row still there');

# --- pg_dump -Fc and pg_restore into a new database

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', $setup_sql);
is(pass_leaf('src', 'pt_d1'), '20000 0 false false', 'source: pt_d1 passed');
my $partitioned_sql = q{
SELECT relation || ' ' || cluster_by::text || ' ' || age_column || ' ' || hot_window || ' '
	|| registered_at || ' ' || registered_by FROM archive_cluster_partitioned};
my $partitioned = $node->safe_psql('src', $partitioned_sql);
like($partitioned, qr/^pt \{cid,ts\} ts 01:00:00 /, 'source: the registration');
is($node->safe_psql('src', 'SELECT count(*) FROM archive_cluster_leaves'), '1', 'source: one leaf passed');
my $src_rows = rows_of('src', 'pt');
like($src_rows, qr/^60100:/, 'source: 60,100 rows');

my $dump = PostgreSQL::Test::Utils::tempdir . '/src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ],
	'pg_dump -Fc of the source database');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
is($node->safe_psql('dst', "SELECT count(*) FROM pg_extension WHERE extname = 'archive_cluster'"),
	'0', 'the new database has no archive_cluster before the restore');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore into the new database, without errors');

is($node->safe_psql('dst', "SELECT extversion FROM pg_extension WHERE extname = 'archive_cluster'"),
	'1.1', 'restored: the extension created by the restore');
is($node->safe_psql('dst', $partitioned_sql), $partitioned, 'restored: the same registration');
is( $node->safe_psql('dst',
		q{SELECT count(*) FROM archive_cluster_partitioned p JOIN pg_class c ON c.oid = p.relation
		  WHERE c.relname = 'pt' AND c.relkind = 'p' AND c.relnamespace = 'public'::regnamespace}),
	'1', 'restored: the registration names the restored partitioned table');
isnt(
	$node->safe_psql('dst', q{SELECT relation::oid FROM archive_cluster_partitioned}),
	$node->safe_psql('src', q{SELECT relation::oid FROM archive_cluster_partitioned}),
	'restored: by name, not by the source OID');
is($node->safe_psql('dst', 'SELECT count(*) FROM archive_cluster_leaves'),
	'0', 'restored: archive_cluster_leaves is empty (not dumped)');
is( $node->safe_psql('dst',
		q{SELECT string_agg(leaf || ' ' || closed || ' ' || coalesce(closed_by, '-') || ' ' || passes, ', ' ORDER BY leaf::text)
		  FROM archive_cluster_partitions('pt')}),
	'pt_d1 true bound 0, pt_d2 true bound 0, pt_d3 true bound 0, pt_now false - 0',
	'restored: archive_cluster_partitions() lists the leaves, none passed');
is(rows_of('dst', 'pt'), $src_rows, 'restored: the same rows');
is(pass_leaf('dst', 'pt_d2'), '20000 0 false false', 'restored: a pass over a closed leaf (pt_d2) goes through');
is(pass_leaf('dst', 'pt_d1'), '20000 0 false false', 'restored: a pass over the leaf passed before the dump goes through');
is( $node->safe_psql('dst',
		q{SELECT string_agg(leaf || ' ' || passes || ' ' || rows_rewritten || ' ' || (settled_at IS NOT NULL), ', ' ORDER BY leaf::text)
		  FROM archive_cluster_leaves}),
	'pt_d1 1 20000 true, pt_d2 1 20000 true',
	'restored: the passes recorded');
is(rows_of('dst', 'pt'), $src_rows, 'restored, then the passes: the same rows');
cmp_ok(pages_per_key('dst', 'pt_d2') * 10, '<', pages_per_key('src', 'pt_d2'),
	'restored: the pass clustered pt_d2');
is(rows_of('src', 'pt'), $src_rows, 'the source database is unchanged');

# --- a passed leaf dropped while registered; a leaf created afterwards

my $d1 = $node->safe_psql('postgres', "SELECT 'pt_d1'::regclass::oid");
is( $node->safe_psql('postgres',
		'SELECT string_agg(leaf::text, \',\' ORDER BY leaf::text) FROM archive_cluster_leaves'),
	'pt_d1,pt_d2', 'before the drop: pt_d1 and pt_d2 passed');
$node->safe_psql('postgres', 'DROP TABLE pt_d1');
is($node->safe_psql('postgres', "SELECT count(*) FROM archive_cluster_leaves WHERE leaf = $d1"),
	'0', 'DROP TABLE of a passed leaf removes its row from archive_cluster_leaves');
is($node->safe_psql('postgres', 'SELECT string_agg(leaf::text, \',\') FROM archive_cluster_leaves'),
	'pt_d2', 'the other leaf keeps its row');
is($node->safe_psql('postgres', 'SELECT relation::text FROM archive_cluster_partitioned'),
	'pt', 'the table stays registered');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(leaf::text, ',' ORDER BY leaf::text) FROM archive_cluster_partitions('pt')}),
	'pt_d2,pt_d3,pt_now', 'archive_cluster_partitions() no longer lists the dropped leaf');

$node->safe_psql(
	'postgres', q{
CREATE TABLE pt_d0 PARTITION OF pt FOR VALUES FROM ('2019-12-31') TO ('2020-01-01');
INSERT INTO pt SELECT g, g % 50, timestamptz '2019-12-31' + g * interval '10 s', repeat('n', 100), NULL
FROM generate_series(1, 5000) g;
});
is( $node->safe_psql('postgres',
		q{SELECT closed || ' ' || closed_by || ' ' || passes FROM archive_cluster_partitions('pt') WHERE leaf = 'pt_d0'::regclass}),
	'true bound 0', 'a partition created afterwards is listed, closed by its bound, without any call');
my $d0_rows = rows_of('postgres', 'pt_d0');
is(pass_leaf('postgres', 'pt_d0'), '5000 0 false false', 'the new partition is passed');
is(leaf_record('postgres', 'pt_d0'), '1 5000 true', 'its pass is recorded');
is(rows_of('postgres', 'pt_d0'), $d0_rows, 'the new partition keeps its rows');
amcheck_leaf('postgres', 'the new partition, passed', 'pt_d0');

# --- kill -9 in a tail pass
# pt_d3 (never passed so far) gets a whole pass, which writes its rows onto
# new pages at the end of the file, and a VACUUM, which frees the pages it
# emptied but cannot truncate: the next pass that archive_cluster_run() makes
# is a tail pass (the rows beyond the pages the leaf needs, onto the lowest
# empty pages).  That pass is held after its first page and its backend
# killed; then a tail pass goes through and the VACUUM after it truncates.
{
	my $what = 'kill -9 in a tail pass';
	my $leaf = 'pt_d3';
	my $size_sql = "SELECT pg_relation_size('$leaf') / 8192";
	my $runs_sql = "SELECT count(*) FROM archive_cluster_runs WHERE relation = 'pt'::regclass";
	# the lowest heap page that holds a row of the leaf
	my $first_page_sql = "SELECT min((ctid::text::point)[0])::int FROM $leaf";
	my $rows = rows_of('postgres', $leaf);
	like($rows, qr/^20000:[0-9a-f]{32}$/, "$leaf: 20,000 rows");
	my $ppk = pages_per_key('postgres', $leaf);
	my $pages0 = $node->safe_psql('postgres', $size_sql);
	is(pass_leaf('postgres', $leaf), '20000 0 false false', "$what: a first, whole pass over $leaf");
	my $pages1 = $node->safe_psql('postgres', $size_sql);
	cmp_ok($pages1, '>=', 2 * $pages0, "$what: the first pass doubled the leaf ($pages0 -> $pages1 pages)");
	$node->safe_psql('postgres', "VACUUM $leaf");
	is($node->safe_psql('postgres', $size_sql), $pages1,
		"$what: VACUUM after the first pass cannot truncate the leaf");
	cmp_ok($node->safe_psql('postgres', $first_page_sql), '>=', $pages0,
		"$what: the rows lie in the back half, after the pages VACUUM freed");
	is(leaf_record('postgres', $leaf), '1 20000 true', "$what: the first pass is recorded, settled");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_all_tables s JOIN archive_cluster_partitions('pt') p ON p.leaf = s.relid
			 WHERE p.leaf = '$leaf'::regclass AND s.last_vacuum > p.last_pass_at AND NOT p.resumes"),
		'1', "$what: $leaf vacuumed since its pass, which went through to the end: a tail pass is due");
	my $runs = $node->safe_psql('postgres', $runs_sql);

	# the tail pass of archive_cluster_run('pt'): only pt_d3 is due (pt_d0
	# and pt_d2 were passed and not vacuumed since, pt_now is open)
	my ($pid, @sessions) = start_paused_pass('postgres', $leaf, 1, $what,
		"SELECT * FROM archive_cluster_run('pt')");
	my $xid = $node->safe_psql('postgres', "SELECT backend_xid FROM pg_stat_activity WHERE pid = $pid");
	like($xid, qr/^\d+$/, "$what: the pass has a transaction id");
	my $done = $node->safe_psql('postgres',
		"SELECT rows_done FROM archive_cluster_progress WHERE pid = $pid AND kind = 'partition pass'");
	cmp_ok($done || 0, '>', 0, "$what: archive_cluster_progress shows rows written ($done)");
	# (the pass runs in a subtransaction of archive_cluster_run(): its rows'
	# xmax is that subtransaction's ID, one of the transaction IDs it locks)
	my $xids_sql = "SELECT transactionid::text FROM pg_locks WHERE locktype = 'transactionid' AND pid = $pid";
	my ($deleted, $low) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT count(*), min((ctid::text::point)[0])::int FROM $leaf WHERE xmax::text IN ($xids_sql)");
	cmp_ok($deleted, '>=', $done || 1, "$what: the pass deleted rows ($deleted), at least those it wrote");
	# a whole pass would start with the first customer's rows, on the first
	# pages of the back half; a tail pass takes rows only beyond the pages
	# the leaf needs (at least as many as its rows occupy)
	cmp_ok($low, '>', $pages1 - $pages0,
		"$what: it moves rows of the tail only (lowest page it deleted from: $low of $pages1)");
	is($node->safe_psql('postgres', "SELECT count(*) FROM $leaf WHERE xmax::text IN ($xids_sql) AND cid = 0"),
		'0', "$what: none of the first customer's rows");
	is($node->safe_psql('postgres', $size_sql), $pages1,
		"$what: it writes onto the empty pages below the tail, none at the end");
	is(rows_of('postgres', $leaf), $rows, "$what: others still see the same rows");
	$node->safe_psql('postgres', 'CHECKPOINT');
	crash_backend($node, 'postgres', $pid, $what, @sessions);

	is(rows_of('postgres', $leaf), $rows, "$what: the leaf holds the same rows (count, md5)");
	amcheck_leaf('postgres', $what, $leaf);
	is(leaf_record('postgres', $leaf), '1 20000 true', "$what: nothing recorded for the crashed pass");
	is( $node->safe_psql('postgres',
			"SELECT resumes FROM archive_cluster_partitions('pt') WHERE leaf = '$leaf'::regclass"),
		'f', "$what: no resume point or tail mark left");
	is($node->safe_psql('postgres', $runs_sql), $runs, "$what: no run recorded");
	cmp_ok($node->safe_psql('postgres', $first_page_sql), '>=', $pages0,
		"$what: the rows are still in the back half");

	# the crash discarded the statistics (last_vacuum): the VACUUM that
	# clears the crashed pass's aborted rows off the front pages makes the
	# tail pass due again
	$node->safe_psql('postgres', "VACUUM $leaf");
	my ($status, $moved, $batches) = split /\|/,
	  $node->safe_psql('postgres', "SELECT status, rows_moved, batches FROM archive_cluster_run('pt')");
	is("$status $batches", 'passed 1', "$what, then archive_cluster_run(): one partition passed");
	cmp_ok($moved, '>', 0, "$what, then archive_cluster_run(): rows moved ($moved)");
	cmp_ok($moved, '<', 20000, "$what, then archive_cluster_run(): not every row (a tail)");
	is( $node->safe_psql('postgres',
			"SELECT kind || ' ' || started_by || ' ' || rows_moved || ' ' || rows_busy || ' ' || (detail ~ '^leaf public\\.$leaf \\(tail\\): \\d+ pages; ')
			 FROM archive_cluster_runs WHERE relation = 'pt'::regclass ORDER BY run_id DESC LIMIT 1"),
		"pass manual $moved 0 true",
		"$what, then archive_cluster_run(): a tail pass of $leaf recorded");
	is($node->safe_psql('postgres', $runs_sql), $runs + 1, "$what, then archive_cluster_run(): one run recorded");
	is(leaf_record('postgres', $leaf), '2 ' . (20000 + $moved) . ' true',
		"$what, then archive_cluster_run(): a second settled pass recorded");
	is(rows_of('postgres', $leaf), $rows, "$what, then a tail pass: the same rows (count, md5)");
	amcheck_leaf('postgres', "$what, then a tail pass", $leaf);
	$node->safe_psql('postgres', "VACUUM $leaf");
	my $pages2 = $node->safe_psql('postgres', $size_sql);
	cmp_ok($pages2, '<', 0.6 * $pages1, "$what, then a tail pass and VACUUM: the file truncated ($pages1 -> $pages2 pages)");
	cmp_ok($pages2, '<=', 1.1 * $pages0, "$what, then a tail pass and VACUUM: about the leaf's size before its passes ($pages0 pages)");
	# (the page the crashed pass wrote may still hold its dead line pointers:
	# a VACUUM that finds them on so few pages skips the index vacuuming)
	cmp_ok($node->safe_psql('postgres', $first_page_sql), '<', 8,
		"$what, then a tail pass and VACUUM: the rows start at the front of the file");
	my $ppk2 = pages_per_key('postgres', $leaf);
	cmp_ok($ppk2 * 10, '<', $ppk, "$what, then a tail pass: pages per customer $ppk before the passes, $ppk2 after");
	is(rows_of('postgres', $leaf), $rows, "$what, then a tail pass and VACUUM: the same rows (count, md5)");
	amcheck_leaf('postgres', "$what, then a tail pass and VACUUM", $leaf);
	is($node->safe_psql('postgres', "SELECT status FROM archive_cluster_run('pt')"),
		'nothing due', "$what: then nothing is due");
}

# --- a crash after a whole pass, before and after its commit
#
# In a database of its own (the same setup): (c) a pass that went through
# to the end in an open transaction, its WAL flushed, then an immediate
# shutdown: its transaction ends aborted at the restart (the same rows,
# amcheck clean, nothing recorded, and a new pass goes through); (d) a pass
# committed, its WAL flushed, no checkpoint, then an immediate shutdown: the
# restart replays it (the same rows, clustered, amcheck clean, the pass
# recorded).
$node->safe_psql('postgres', 'CREATE DATABASE crashdb');
$node->safe_psql('crashdb', $setup_sql . ($amcheck ? "CREATE EXTENSION amcheck;\n" : ''));
{
	my $what = 'immediate shutdown after a whole pass, before its commit';
	my $rows = rows_of('crashdb', 'pt_d1');
	my $ppk = pages_per_key('crashdb', 'pt_d1');
	my $session = $node->background_psql('crashdb');
	$session->query_safe('BEGIN');
	is($session->query_safe(
			"SELECT rows_rewritten || ' ' || rows_busy || ' ' || gave_way FROM archive_cluster_pass_leaf('pt_d1')"),
		'20000 0 false', "$what: the pass went through to the end");
	my $switch = $node->safe_psql('crashdb', 'SELECT pg_switch_wal()');
	is($node->safe_psql('crashdb', "SELECT pg_current_wal_flush_lsn() >= '$switch'"),
		't', "$what: its WAL is flushed");
	is(rows_of('crashdb', 'pt_d1'), $rows, "$what: others see the same rows");
	restart_immediate($node, $session);
	check_after_crash('crashdb', $what, 'pt_d1', $rows, $ppk);
}
{
	my $what = 'immediate shutdown after a committed pass';
	my $rows = rows_of('crashdb', 'pt_d2');
	my $ppk = pages_per_key('crashdb', 'pt_d2');
	$node->safe_psql('crashdb', 'CHECKPOINT');
	is(pass_leaf('crashdb', 'pt_d2'), '20000 0 false false', "$what: the pass went through and committed");
	my $switch = $node->safe_psql('crashdb', 'SELECT pg_switch_wal()');
	is($node->safe_psql('crashdb', "SELECT pg_current_wal_flush_lsn() >= '$switch'"),
		't', "$what: its WAL is flushed");
	restart_immediate($node);
	is(rows_of('crashdb', 'pt_d2'), $rows, "$what: the same rows after the replay (count, md5)");
	my $after = pages_per_key('crashdb', 'pt_d2');
	cmp_ok($after * 10, '<', $ppk, "$what: still clustered after the replay ($ppk -> $after pages per customer)");
	is(leaf_record('crashdb', 'pt_d2'), '1 20000 true', "$what: the pass is recorded");
	amcheck_leaf('crashdb', $what, 'pt_d2');
}

$node->stop;
done_testing();
