# Logical replication of a registered partitioned table (mode =>
# 'partitioned'): a pass over a closed leaf deletes each row and inserts it
# again, so subscribers receive it as deletes and inserts of the same rows.
#
# A publisher with "events" (primary key (id, ts), so a replica identity;
# a TOASTed value now and then), partitioned by day on ts: two closed leaves
# and an open one, registered.  Two subscriptions on one subscriber node,
# each into a database of its own:
#   s_leaf: publication p_leaf, publish_via_partition_root = false; the
#     same partitions (the changes arrive per leaf), archive_cluster
#     installed and the table registered there too;
#   s_root: publication p_root, publish_via_partition_root = true; another
#     partitioning (one partition for both closed days, one for the rest),
#     registered too.
# After the initial copy, archive_cluster_run('events', max_batches => 10) passes the closed
# leaves while writes go on: the pass held after its first page
# (archive_cluster.debug_pause = 'leaf_page') while others commit inserts
# into the open leaf and updates of not yet passed rows of both closed
# leaves; a transaction holding an update of a closed leaf's row and one
# holding inserts into the open leaf, both open across the pass; an update
# and a delete before it, updates and a delete of moved rows after it; then
# a forced second round of passes after a VACUUM.  Each time, once the
# subscribers caught up (no apply error, checked while waiting): each
# subscriber has the publisher's rows (count and md5 of all of them in (id,
# ts) order; per leaf for s_leaf), none twice, and every row of the closed
# days there was written again by the replicated pass (its xmin is newer
# than the pass), while on the publisher the runs history shows the rows
# rewritten and busy, and no row of the closed leaves is where it was.
#
# Refusals on the publisher (SQLSTATE 55000, nothing moved: ctids the same,
# no pass recorded): a publication that replicates a leaf's inserts but not
# its deletes, or its deletes but not its inserts (through the partitioned
# table, the leaf itself, or the root with publish_via_partition_root);
# archive_cluster_run() reports it as a WARNING; the same leaf, once both
# are published, is passed.  A leaf without a replica identity published
# with deletes: refused as a DELETE would be (CheckCmdReplicaIdentity); with
# REPLICA IDENTITY FULL it is passed.
#
# On the subscriber: a pass over a leaf a subscription writes into (s_leaf)
# or whose partitioned table it writes into (s_root) is refused while
# archive_cluster.allow_on_subscriber is off (archive_cluster_run(): a
# WARNING, nothing moved); a superuser who sets it on passes the leaf, and
# the publisher's later updates, deletes and passes of those rows still
# arrive.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $pub = new_node(
	'pub',
	init => { allows_streaming => 'logical' },
	'archive_cluster.enabled' => 'off',
	autovacuum => 'off');
my $sub = new_node(
	'sub',
	'archive_cluster.enabled' => 'off',
	max_logical_replication_workers => 6,
	max_worker_processes => 16);

# the partitioned table, its (cid, ts) index and TOAST storage, before the
# partitions
my $events_sql = q{
CREATE TABLE events (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL,
	big text, PRIMARY KEY (id, ts)) PARTITION BY RANGE (ts);
CREATE INDEX events_cid_ts ON events (cid, ts);
ALTER TABLE events ALTER COLUMN big SET STORAGE EXTERNAL;
};
# the publisher's partitions (and s_leaf's): two closed days and an open leaf
my $leaves_sql = q{
CREATE TABLE events_d1 PARTITION OF events FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
CREATE TABLE events_d2 PARTITION OF events FOR VALUES FROM ('2020-01-02') TO ('2020-01-03');
CREATE TABLE events_now PARTITION OF events FOR VALUES FROM ('2020-01-03') TO (MAXVALUE);
};
my $register_sql =
  q{SELECT archive_cluster_register('events', ARRAY['cid','ts'], 'ts', '1 hour', mode => 'partitioned');};

# per closed day d, ids d * 100000 + 1 .. + 5000, one every 8 s, cid = g %
# 50 (so each customer's rows are spread over the leaf), a TOASTed value
# every 500 rows; 100 rows in the open leaf
$pub->safe_psql(
	'postgres', "CREATE EXTENSION archive_cluster;\n" . $events_sql . $leaves_sql . $register_sql . q{
INSERT INTO events SELECT d * 100000 + g, g % 50,
	timestamptz '2020-01-01' + (d - 1) * interval '1 day' + g * interval '8 s',
	repeat(md5((d * 100000 + g)::text), 2),
	CASE WHEN g % 500 = 0 THEN repeat(md5(g::text), 100) END
FROM generate_series(1, 2) d, generate_series(1, 5000) g;
INSERT INTO events SELECT 900000 + g, g % 50, now() - interval '5 min', 'hot', NULL
FROM generate_series(1, 100) g;
CREATE PUBLICATION p_leaf FOR TABLE events;
CREATE PUBLICATION p_root FOR TABLE events WITH (publish_via_partition_root = true);
});
is( $pub->safe_psql('postgres',
		q{SELECT string_agg(leaf || ' ' || closed, ', ' ORDER BY leaf::text) FROM archive_cluster_partitions('events')}),
	'events_d1 true, events_d2 true, events_now false',
	'publisher: two closed leaves and an open one');
# the number of values in the TOAST table of $leaf on $node
sub toasted
{
	my ($node, $db, $leaf) = @_;
	my $toast = $node->safe_psql($db, "SELECT reltoastrelid::regclass FROM pg_class WHERE oid = '$leaf'::regclass");
	return $node->safe_psql($db, "SELECT count(DISTINCT chunk_id) FROM $toast");
}
is(toasted($pub, 'postgres', 'events_d1') . ' ' . toasted($pub, 'postgres', 'events_d2'),
	'10 10', 'publisher: each closed leaf holds 10 TOASTed values');

# the subscriber: dleaf with the same partitions, droot with others; both
# with archive_cluster and the table registered
$sub->safe_psql('postgres', 'CREATE DATABASE dleaf');
$sub->safe_psql('postgres', 'CREATE DATABASE droot');
$sub->safe_psql('dleaf', "CREATE EXTENSION archive_cluster;\n" . $events_sql . $leaves_sql . $register_sql);
$sub->safe_psql(
	'droot', "CREATE EXTENSION archive_cluster;\n" . $events_sql . q{
CREATE TABLE events_old PARTITION OF events FOR VALUES FROM (MINVALUE) TO ('2020-01-03');
CREATE TABLE events_new PARTITION OF events FOR VALUES FROM ('2020-01-03') TO (MAXVALUE);
} . $register_sql);

my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('dleaf', "CREATE SUBSCRIPTION s_leaf CONNECTION '$connstr' PUBLICATION p_leaf");
$sub->safe_psql('droot', "CREATE SUBSCRIPTION s_root CONNECTION '$connstr' PUBLICATION p_root");
$sub->wait_for_subscription_sync($pub, 's_leaf', 'dleaf');
$sub->wait_for_subscription_sync($pub, 's_root', 'droot');
is( $sub->safe_psql('dleaf',
		q{SELECT string_agg(srrelid::regclass::text, ',' ORDER BY srrelid::regclass::text) FROM pg_subscription_rel}),
	'events_d1,events_d2,events_now', 's_leaf writes into the leaves');
is($sub->safe_psql('droot', q{SELECT string_agg(srrelid::regclass::text, ',') FROM pg_subscription_rel}),
	'events', 's_root writes into the partitioned table');

# "count:md5" of the rows of $rel, all columns, in (id, ts) order
sub rows_sql
{
	my ($rel) = @_;
	return "SELECT count(*) || ':' || coalesce(md5(string_agg(r::text, ',' ORDER BY id, ts)), '-') FROM $rel r";
}

# Waits until both subscribers have applied all the publisher wrote, and
# fails at once (with the subscriber's log) if an apply or sync worker
# fails meanwhile: a duplicate key or a missing row stops the apply
my $errors_sql =
  q{SELECT coalesce(sum(apply_error_count + sync_error_count), 0) FROM pg_stat_subscription_stats};
sub catch_up
{
	my ($what) = @_;
	my $lsn = $pub->lsn('write');
	my $caught_sql =
	  "SELECT count(*) = 2 FROM pg_stat_replication WHERE application_name IN ('s_leaf', 's_root')"
	  . " AND state = 'streaming' AND '$lsn' <= replay_lsn";
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while ($pub->safe_psql('postgres', $caught_sql) ne 't')
	{
		my $errors = $sub->safe_psql('postgres', $errors_sql);
		if ($errors ne '0' || time > $deadline)
		{
			diag("subscriber log:\n" . slurp_file($sub->logfile));
			fail("$what: the subscribers catch up");
			die "$what: the subscribers did not catch up ($errors apply or sync errors)";
		}
		usleep(50_000);
	}
	is($sub->safe_psql('postgres', $errors_sql), '0', "$what: no apply error on the subscriber");
}

# After catch_up: each subscriber has the publisher's rows, none twice;
# s_leaf in the same leaves.  Returns the publisher's "count:md5".
sub same_rows
{
	my ($what) = @_;
	catch_up($what);
	my $rows = $pub->safe_psql('postgres', rows_sql('events'));
	is($sub->safe_psql('dleaf', rows_sql('events')), $rows, "$what: s_leaf has the publisher's rows ($rows)");
	is($sub->safe_psql('droot', rows_sql('events')), $rows, "$what: s_root has the publisher's rows");
	foreach my $leaf (qw(events_d1 events_d2 events_now))
	{
		is($sub->safe_psql('dleaf', rows_sql($leaf)), $pub->safe_psql('postgres', rows_sql($leaf)),
			"$what: s_leaf: $leaf has the rows of the publisher's");
	}
	foreach my $db (qw(dleaf droot))
	{
		is($sub->safe_psql($db, 'SELECT count(*) - count(DISTINCT (id, ts)) FROM events'),
			'0', "$what: $db: no row twice");
	}
	return $rows;
}

my $initial = same_rows('initial copy');
like($initial, qr/^10100:/, 'initial copy: 10,100 rows');

# the last transaction id given so far on $node: rows whose xmin is newer
# were written after this
sub xid_now
{
	my ($node, $db) = @_;
	return $node->safe_psql($db, 'SELECT pg_current_xact_id()::text::bigint');
}

# the number of rows of events on $node where $where holds, written (their
# xmin) no later than transaction $xid; $closed: the rows of the closed days
my $closed = q{ts < '2020-01-03'};
sub rows_older
{
	my ($node, $db, $xid, $where) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) FROM events WHERE $where AND xmin::text::bigint <= $xid");
}

# --- a run while writes go on

# before it: an update and a delete in the closed leaves
$pub->safe_psql(
	'postgres', q{
UPDATE events SET pad = 'updated before the pass' WHERE id = 100007;
DELETE FROM events WHERE id = 200011;
});
same_rows('before the pass');
my $pub_xid = xid_now($pub, 'postgres');
my %sub_xid = map { $_ => xid_now($sub, $_) } qw(dleaf droot);

# open across the pass: an update of a row of events_d2 (cid 48: the pass
# finds it busy and leaves it), inserts into the open leaf
my $held_update = $pub->background_psql('postgres');
$held_update->query_safe(
	q{BEGIN; UPDATE events SET pad = 'updated across the pass' WHERE id = 200048});
my $held_insert = $pub->background_psql('postgres');
$held_insert->query_safe(
	q{BEGIN; INSERT INTO events SELECT 920000 + g, g % 50, now(), 'inserted across the pass', NULL FROM generate_series(1, 50) g});

# the run, held after its first page (cid 0's rows of its first leaf)
my $pause_holder = $pub->background_psql('postgres');
$pause_holder->query_safe('SELECT pg_advisory_lock(1094930497, 7)');
my $runner = $pub->background_psql('postgres', on_error_stop => 0);
$runner->query_safe(q{SET archive_cluster.debug_pause = 'leaf_page'});
$runner->query_until(qr/started/,
	"\\echo started\nSELECT status || ' ' || rows_moved || ' ' || batches FROM archive_cluster_run('events', max_batches => 10);\n");
ok( $pub->poll_query_until(
		'postgres',
		q{SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 1094930497 AND objid = 7 AND NOT granted}
	),
	'the run waits after the first page of its first leaf');
is( $pub->safe_psql('postgres',
		q{SELECT kind || ' ' || (rows_done > 0) FROM archive_cluster_progress WHERE kind = 'partition pass'}),
	'partition pass true', 'archive_cluster_progress shows the pass, rows written');

# meanwhile, committed: inserts into the open leaf, an update of a cid 49
# row of each closed leaf (not reached yet: in the leaf being passed, older
# than the pass's snapshot, it is busy; in the other, passed with the rest)
$pub->safe_psql(
	'postgres', q{
INSERT INTO events SELECT 910000 + g, g % 50, now(), 'inserted during the pass', NULL FROM generate_series(1, 200) g;
UPDATE events SET pad = 'updated during the pass' WHERE id IN (100049, 200049);
});
$held_insert->query_safe('COMMIT');
$pause_holder->query_safe('SELECT pg_advisory_unlock(1094930497, 7)');
# 9,999 rows in the closed leaves; two busy: the row held, one updated
like($runner->query_safe(q{SELECT 'end'}), qr/^passed 9997 2\nend$/,
	'the run passed both closed leaves: 9,997 rows rewritten');
$held_update->query_safe('COMMIT');
$_->quit foreach ($held_update, $held_insert, $pause_holder, $runner);

is( $pub->safe_psql('postgres',
		q{SELECT count(*) || ' ' || sum(rows_moved) || ' ' || sum(rows_busy) || ' ' || count(error)
		  FROM archive_cluster_runs WHERE relation = 'events'::regclass AND kind = 'pass'}),
	'2 9997 2 0', 'runs history: two passes, 9,997 rows rewritten, 2 busy, no error');
is( $pub->safe_psql('postgres',
		q{SELECT string_agg(leaf || ' ' || passes, ', ' ORDER BY leaf::text) FROM archive_cluster_partitions('events')}),
	'events_d1 1, events_d2 1, events_now 0', 'each closed leaf passed once, the open one not');
is(rows_older($pub, 'postgres', $pub_xid, $closed), '0',
	'publisher: every row of the closed leaves written again (by the pass or an update)');
is(rows_older($pub, 'postgres', $pub_xid, "NOT $closed"), '100',
	'publisher: the open leaf\'s rows untouched');
is( $pub->safe_psql('postgres',
		q{SELECT string_agg(id || ' ' || pad, ', ' ORDER BY id) FROM events WHERE id IN (100007, 100049, 200011, 200048, 200049)}),
	'100007 updated before the pass, 100049 updated during the pass, 200048 updated across the pass, 200049 updated during the pass',
	'publisher: the updates and the delete kept');

my $after_pass = same_rows('after the pass');
like($after_pass, qr/^10349:/, 'after the pass: 10,349 rows');
foreach my $db (qw(dleaf droot))
{
	is(rows_older($sub, $db, $sub_xid{$db}, $closed), '0',
		"$db: every row of the closed days written again: the pass arrived as deletes and inserts");
	is(rows_older($sub, $db, $sub_xid{$db}, "NOT $closed"), '100', "$db: the open leaf's first rows untouched");
}

# after it: updates (one of a TOASTed row, the value unchanged) and a delete
# of moved rows
$pub->safe_psql(
	'postgres', q{
UPDATE events SET pad = 'updated after the pass' WHERE id IN (100008, 100500, 200500);
UPDATE events SET big = repeat('new', 1000) WHERE id = 100009;
DELETE FROM events WHERE id = 200020;
});
same_rows('updates and a delete after the pass');

# a second round, forced, after a VACUUM (a whole pass, onto the pages VACUUM freed)
$pub_xid = xid_now($pub, 'postgres');
%sub_xid = map { $_ => xid_now($sub, $_) } qw(dleaf droot);
$pub->safe_psql('postgres', 'VACUUM events_d1, events_d2');
is( $pub->safe_psql('postgres',
		q{SELECT status || ' ' || rows_moved || ' ' || batches FROM archive_cluster_run('events', force => true, max_batches => 10)}),
	'passed 9998 2', 'a second, forced run passes both leaves again');
is( $pub->safe_psql('postgres',
		q{SELECT string_agg(leaf || ' ' || passes, ', ' ORDER BY leaf::text) FROM archive_cluster_partitions('events')}),
	'events_d1 2, events_d2 2, events_now 0', 'each closed leaf passed twice');
is(rows_older($pub, 'postgres', $pub_xid, $closed), '0', 'second round: every row of the closed leaves rewritten');
$pub->safe_psql('postgres',
	q{INSERT INTO events VALUES (930001, 7, now(), 'after the second round', NULL); UPDATE events SET pad = 'again' WHERE id = 100010});
same_rows('second round');
foreach my $db (qw(dleaf droot))
{
	is(rows_older($sub, $db, $sub_xid{$db}, $closed), '0', "second round: $db received the pass");
}

# --- refusals on the publisher: half of a pass published

# the ctids of $rel's rows, and its recorded passes
sub where_rows
{
	my ($node, $db, $rel, $root) = @_;
	return $node->safe_psql($db,
		"SELECT md5(string_agg(ctid::text, ',' ORDER BY id)) || ' ' || (SELECT passes FROM archive_cluster_partitions('$root') WHERE leaf = '$rel'::regclass) FROM $rel"
	);
}

# psql with the SQLSTATE in the messages: (return code, stderr)
sub verbose_psql
{
	my ($node, $db, $sql) = @_;
	my ($rc, $out, $err) = $node->psql($db, "\\set VERBOSITY verbose\n$sql");
	return ($rc, $err);
}

$pub->safe_psql(
	'postgres', q{
CREATE TABLE half (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, PRIMARY KEY (id, ts))
	PARTITION BY RANGE (ts);
CREATE INDEX ON half (cid, ts);
CREATE TABLE half_d1 PARTITION OF half FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
INSERT INTO half SELECT g, g % 20, timestamptz '2020-01-01' + g * interval '10 s' FROM generate_series(1, 2000) g;
SELECT archive_cluster_register('half', ARRAY['cid','ts'], 'ts', '1 hour', mode => 'partitioned');
});
my $half_where = where_rows($pub, 'postgres', 'half_d1', 'half');
like($half_where, qr/^[0-9a-f]{32} 0$/, 'half_d1: not passed yet');

my @halves = (
	[ 'CREATE PUBLICATION p_half FOR TABLE half WITH (publish = \'insert\')', 'inserts', 'deletes',
		'an insert-only publication of the partitioned table' ],
	[ 'CREATE PUBLICATION p_half FOR TABLE half_d1 WITH (publish = \'delete\')', 'deletes', 'inserts',
		'a delete-only publication of the leaf' ],
	[ 'CREATE PUBLICATION p_half FOR TABLE half WITH (publish = \'delete, update\', publish_via_partition_root = true)',
		'deletes', 'inserts', 'a delete-only publication via the root' ],
	# a subscriber may take one publication only: each is checked on its own
	[ 'CREATE PUBLICATION p_all FOR TABLE half; CREATE PUBLICATION p_half FOR TABLE half WITH (publish = \'insert\')',
		'inserts', 'deletes', 'an insert-only publication beside one of all actions' ]);
foreach my $case (@halves)
{
	my ($create, $has, $hasnt, $what) = @$case;
	$pub->safe_psql('postgres', $create);
	my ($rc, $err) = verbose_psql($pub, 'postgres', q{SELECT * FROM archive_cluster_pass_leaf('half_d1')});
	like($err,
		qr/ERROR:  55000: cannot move rows of "half_d1": publication "p_half" replicates its $has but not its $hasnt/,
		"$what: a pass is refused (55000), naming the publication");
	($rc, $err) = verbose_psql($pub, 'postgres', q{SELECT status FROM archive_cluster_run('half')});
	like($err, qr/WARNING:  55000: cannot move rows of "half_d1": publication "p_half" replicates its $has/,
		"$what: archive_cluster_run() warns the same");
	is(where_rows($pub, 'postgres', 'half_d1', 'half'), $half_where, "$what: nothing moved, no pass recorded");
	$pub->safe_psql('postgres', 'DROP PUBLICATION p_half; DROP PUBLICATION IF EXISTS p_all');
}
is( $pub->safe_psql('postgres',
		q{SELECT count(*) FROM archive_cluster_runs WHERE relation = 'half'::regclass AND kind = 'pass' AND error LIKE '%publication "p_half" replicates its%'}),
	'4', 'runs history: the four refused runs recorded with their error');

# both published: the same leaf is passed
$pub->safe_psql('postgres', q{CREATE PUBLICATION p_half FOR TABLE half WITH (publish = 'insert, delete')});
is($pub->safe_psql('postgres', q{SELECT rows_rewritten || ' ' || rows_busy FROM archive_cluster_pass_leaf('half_d1')}),
	'2000 0', 'inserts and deletes published: the pass goes through');
isnt(where_rows($pub, 'postgres', 'half_d1', 'half'), $half_where, '... and moved the rows');
$pub->safe_psql('postgres', 'DROP PUBLICATION p_half');

# --- a published leaf without a replica identity: refused as a DELETE is

$pub->safe_psql(
	'postgres', q{
CREATE TABLE nopk (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL) PARTITION BY RANGE (ts);
CREATE INDEX ON nopk (cid, ts);
CREATE TABLE nopk_d1 PARTITION OF nopk FOR VALUES FROM ('2020-01-01') TO ('2020-01-02');
INSERT INTO nopk SELECT g, g % 20, timestamptz '2020-01-01' + g * interval '10 s' FROM generate_series(1, 2000) g;
SELECT archive_cluster_register('nopk', ARRAY['cid','ts'], 'ts', '1 hour', mode => 'partitioned');
CREATE PUBLICATION p_nopk FOR TABLE nopk;
});
my $nopk_where = where_rows($pub, 'postgres', 'nopk_d1', 'nopk');
my ($rc, $err) = verbose_psql($pub, 'postgres', q{DELETE FROM nopk WHERE id = 1});
like($err, qr/ERROR:  55000: cannot delete from table "nopk_d1" because it does not have a replica identity and publishes deletes/,
	'no replica identity: a DELETE is refused');
($rc, $err) = verbose_psql($pub, 'postgres', q{SELECT * FROM archive_cluster_pass_leaf('nopk_d1')});
like($err, qr/ERROR:  55000: cannot delete from table "nopk_d1" because it does not have a replica identity and publishes deletes/,
	'no replica identity: a pass is refused as a DELETE is');
($rc, $err) = verbose_psql($pub, 'postgres', q{SELECT status FROM archive_cluster_run('nopk')});
like($err, qr/WARNING:  55000: cannot delete from table "nopk_d1" because it does not have a replica identity/,
	'no replica identity: archive_cluster_run() warns the same');
is(where_rows($pub, 'postgres', 'nopk_d1', 'nopk'), $nopk_where, 'no replica identity: nothing moved, no pass recorded');
$pub->safe_psql('postgres', 'ALTER TABLE nopk_d1 REPLICA IDENTITY FULL');
is($pub->safe_psql('postgres', q{SELECT rows_rewritten FROM archive_cluster_pass_leaf('nopk_d1')}),
	'2000', 'with REPLICA IDENTITY FULL, the pass goes through');

# --- on the subscriber: a pass into a subscription's target is refused

my %targets = (
	dleaf => [ 'events_d1', 'events_d1', 's_leaf' ],
	droot => [ 'events_old', 'events', 's_root' ]);
foreach my $db (qw(dleaf droot))
{
	my ($leaf, $target, $subname) = @{ $targets{$db} };
	is( $sub->safe_psql($db,
			"SELECT closed || ' ' || passes FROM archive_cluster_partitions('events') WHERE leaf = '$leaf'::regclass"),
		'true 0', "$db: $leaf is closed, never passed");
	my $where = where_rows($sub, $db, $leaf, 'events');
	($rc, $err) = verbose_psql($sub, $db, "SELECT * FROM archive_cluster_pass_leaf('$leaf')");
	like($err, qr/ERROR:  55000: cannot move rows of "$leaf": "$target" is a logical replication target/,
		"$db: a pass over $leaf is refused: $target is a target");
	like($err, qr/DETAIL:  Subscription "$subname" writes into "$target"/, "$db: ... naming the subscription");
	($rc, $err) = verbose_psql($sub, $db, q{SELECT status FROM archive_cluster_run('events')});
	like($err, qr/NOTICE:  00000: skipping \d+ partitions? of "events": a logical replication subscription writes into (them|it)/,
		"$db: archive_cluster_run() leaves the subscription's partitions alone, and says so");
	is(where_rows($sub, $db, $leaf, 'events'), $where, "$db: nothing moved, no pass recorded");
}

# a superuser with archive_cluster.allow_on_subscriber on: passed
my $sub_d1 = $sub->safe_psql('dleaf', q{SELECT count(*) FROM events_d1});
is( $sub->safe_psql('dleaf',
		q{SET archive_cluster.allow_on_subscriber = on; SELECT rows_rewritten || ' ' || rows_busy FROM archive_cluster_pass_leaf('events_d1')}),
	"$sub_d1 0", 'dleaf: with archive_cluster.allow_on_subscriber on, a superuser passes events_d1');
is($sub->safe_psql('dleaf', rows_sql('events_d1')), $pub->safe_psql('postgres', rows_sql('events_d1')),
	'dleaf: events_d1 keeps the publisher\'s rows');
# the publisher's later changes of those rows, and a pass of its own, arrive
$pub->safe_psql(
	'postgres', q{
UPDATE events SET pad = 'updated after the subscriber passed' WHERE id IN (100011, 100012);
DELETE FROM events WHERE id = 100013;
SELECT rows_rewritten FROM archive_cluster_pass_leaf('events_d1');
});
same_rows('after a pass on the subscriber (allowed)');

$sub->stop;
$pub->stop;
done_testing();
