# A table managed by pg_partman 4.x (native daily partitions), registered
# once with mode => 'partitioned': its closed partitions converge to the
# clustered ideal while the workload and pg_partman's maintenance go on.
#
# events (id, cid, ts, pad) partitioned by day on ts through
# partman.create_parent() (a DEFAULT partition, two days premade), an index
# on (cid, ts) and one on id on the parent; seven past days of 6,000 rows
# each, interleaved over 100 customers (so each customer's 60 rows of a day
# are on 60 pages).  Every row written is also written, in the same
# statement, into a ledger (a plain table), so that the expected content is
# known whatever commits when.
#
# The workload, server-side loops (procedures committing at every turn)
# in background psql sessions until told to stop:
#   two writers inserting into the current day through the partitioned
#     table;
#   an updater: random recent rows, and random rows of closed days (which
#     meet rows that passes moved: SQLSTATE 40001, counted and retried; an
#     update finding no row is counted as missed);
#   a report: a customer's count and sum over the whole table, its count and
#     the day's count in a closed day nothing else writes (always 60 and
#     6,000: wrong counts are counted);
#   a backfill: rows into closed days, through the partitioned table.
# Meanwhile the table is registered, and the worker (enabled, naptime 1)
# passes the closed leaves by itself; this script calls pg_partman's
# maintenance every ~2.5 s (CALL partman.run_maintenance_proc(), then
# VACUUM (SKIP_LOCKED, TRUNCATE false), standing in for autovacuum, off:
# an autovacuum in a leaf that a DROP waits for would log a lock wait of
# its own), and moves the retention window so that it drops the oldest
# three leaves: one while the worker's first pass is in it (as far as
# timing allows), one while a pass after a VACUUM is in it, one settled;
# and raises premake so that it creates two partitions.
#
# Checked at the end (workload stopped, the worker left to finish):
#   - nothing waited 1 s or more for a lock (log_lock_waits with
#     deadlock_timeout = 1s: no "still waiting for" line), no ERROR in the
#     log, no error in the run history, the sessions' output clean;
#   - the rows are the ledger's rows in the partitions that remain (count,
#     checksum, EXCEPT ALL both ways), no duplicate id, no missed update, no
#     wrong count in the reports;
#   - each closed leaf that remains was passed by the worker (settled, not
#     resuming, a 'pass' row started by the worker in the run history), and
#     each customer's rows are on few pages: at most 1.5 times the ideal
#     plus one, and a third of before at most (rows backfilled or updated
#     after its last pass are where they were written: the worker passes a
#     settled leaf again only once they loosen its keys past
#     archive_cluster.compaction_threshold);
#   - the partitions that premake created after the registration are listed
#     by archive_cluster_partitions() with no call;
#   - the dropped leaves left no row in archive_cluster_leaves (two of them
#     surely had one), nor did anything else;
#   - amcheck (verify_heapam, bt_index_check heapallindexed) of every leaf.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

my $node = new_node(
	'partman',
	'archive_cluster.enabled' => 'on',
	'archive_cluster.naptime' => 1,
	log_lock_waits => 'on',
	deadlock_timeout => '1s',
	autovacuum => 'off',
	timezone => 'UTC');

my $partman_version = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'pg_partman'");
if ($partman_version !~ /^4\./)
{
	$node->stop;
	plan skip_all => $partman_version eq ''
	  ? 'pg_partman is not installed'
	  : "pg_partman $partman_version is installed; this test is written for 4.x";
}
my $amcheck = !$ENV{ARCHIVE_CLUSTER_NO_AMCHECK};
diag('no amcheck in this installation: its checks are left out') unless $amcheck;

# The days are counted from the day (UTC) the rows are made, and retention
# from now(): the test does not straddle midnight
my $to_midnight = 86400 - time % 86400;
if ($to_midnight < 120)
{
	diag(sprintf('%.0f s to midnight (UTC): waiting for the next day', $to_midnight));
	sleep($to_midnight + 1);
}

my $days = 7;              # past days filled
my $per_day = 6000;        # rows per past day
my $customers = 100;
my $workload_secs = 30;

# --- the table, pg_partman, the rows, the ledger, the workload's procedures

$node->safe_psql(
	'postgres', qq{
SET client_min_messages = warning;
CREATE SCHEMA partman;
CREATE EXTENSION pg_partman SCHEMA partman;
CREATE EXTENSION archive_cluster;
@{[ $amcheck ? 'CREATE EXTENSION amcheck;' : '' ]}
CREATE TABLE wl_t0 AS SELECT date_trunc('day', now()) AS day0;
CREATE TABLE events (id bigint NOT NULL, cid int NOT NULL, ts timestamptz NOT NULL, pad text NOT NULL)
	PARTITION BY RANGE (ts);
CREATE INDEX events_cid_ts ON events (cid, ts);
CREATE INDEX events_id ON events (id);
SELECT partman.create_parent(p_parent_table => 'public.events', p_control => 'ts',
	p_type => 'native', p_interval => 'daily', p_premake => 2,
	p_start_partition => (SELECT to_char(day0 - interval '$days days', 'YYYY-MM-DD HH24:MI:SS') FROM wl_t0));
-- day d ago: ids d * 1000000 + g, one row every 14.4 s, customer g % 100
INSERT INTO events SELECT d * 1000000 + g, g % $customers,
	(SELECT day0 FROM wl_t0) - d * interval '1 day' + g * (interval '1 day' / $per_day),
	repeat(md5((d * 1000000 + g)::text), 3)
FROM generate_series(1, $days) d, generate_series(0, $per_day - 1) g;
INSERT INTO events SELECT 900000 + g, g % $customers, now() - interval '5 min', repeat('h', 96)
FROM generate_series(1, 100) g;
CREATE TABLE ledger (LIKE events);
ALTER TABLE ledger ADD PRIMARY KEY (id);
INSERT INTO ledger SELECT * FROM events;
CREATE SEQUENCE wl_id START 100000000;
CREATE SEQUENCE wl_bf_id START 500000000;
CREATE TABLE wl_ctl (stop boolean NOT NULL);
INSERT INTO wl_ctl VALUES (false);
CREATE TABLE wl_stats (session text, stat text, n bigint);
CREATE TABLE wl_log (at timestamptz DEFAULT clock_timestamp(), what text);

-- inserts into the current day, 5 rows a transaction
CREATE PROCEDURE wl_writer(me text) LANGUAGE plpgsql AS \$\$
DECLARE
	n bigint := 0;
	t timestamptz;
	max_ms float8 := 0;
BEGIN
	WHILE NOT (SELECT stop FROM wl_ctl) LOOP
		t := clock_timestamp();
		WITH ins AS (
			INSERT INTO events
			SELECT nextval('wl_id'), floor(random() * $customers)::int,
				now() - random() * interval '10 min', repeat(md5(random()::text), 3)
			FROM generate_series(1, 5) RETURNING *)
		INSERT INTO ledger SELECT * FROM ins;
		max_ms := greatest(max_ms, 1000 * extract(epoch FROM clock_timestamp() - t));
		n := n + 5;
		COMMIT;
		PERFORM pg_sleep(0.02);
	END LOOP;
	INSERT INTO wl_stats VALUES (me, 'rows', n), (me, 'max_ms', max_ms);
END
\$\$;

-- updates of random rows: recent ones, and (30%) rows of days 1 to 3 ago,
-- closed (day 1 once past 01:00); a row moved meanwhile by a pass: 40001,
-- retried
CREATE PROCEDURE wl_updater() LANGUAGE plpgsql AS \$\$
DECLARE
	n_upd bigint := 0;
	n_old bigint := 0;
	n_40001 bigint := 0;
	n_miss bigint := 0;
	n_gave_up bigint := 0;
	target bigint;
	target_ts timestamptz;
	done bigint;
	tries int;
	old boolean;
	t timestamptz;
	max_ms float8 := 0;
BEGIN
	WHILE NOT (SELECT stop FROM wl_ctl) LOOP
		old := random() < 0.3;
		IF old THEN
			target := (1 + floor(random() * 3))::bigint * 1000000 + floor(random() * $per_day)::bigint;
		ELSE
			target := (SELECT last_value FROM wl_id) - floor(random() * 2000)::bigint;
		END IF;
		SELECT l.ts INTO target_ts FROM ledger l WHERE l.id = target;
		IF FOUND THEN
			tries := 0;
			LOOP
				t := clock_timestamp();
				BEGIN
					WITH u AS (
						UPDATE events SET pad = repeat(md5(random()::text), 3)
						WHERE id = target AND ts = target_ts RETURNING id, pad)
					UPDATE ledger l SET pad = u.pad FROM u WHERE l.id = u.id;
					GET DIAGNOSTICS done = ROW_COUNT;
					max_ms := greatest(max_ms, 1000 * extract(epoch FROM clock_timestamp() - t));
					IF done = 1 THEN
						n_upd := n_upd + 1;
						IF old THEN
							n_old := n_old + 1;
						END IF;
					ELSE
						n_miss := n_miss + 1;
						INSERT INTO wl_log (what) VALUES ('update missed id ' || target);
					END IF;
					EXIT;
				EXCEPTION WHEN serialization_failure THEN
					max_ms := greatest(max_ms, 1000 * extract(epoch FROM clock_timestamp() - t));
					n_40001 := n_40001 + 1;
					tries := tries + 1;
					IF tries >= 20 THEN
						n_gave_up := n_gave_up + 1;
						EXIT;
					END IF;
				END;
			END LOOP;
		END IF;
		COMMIT;
		PERFORM pg_sleep(0.005);
	END LOOP;
	INSERT INTO wl_stats VALUES ('updater', 'updates', n_upd), ('updater', 'old_updates', n_old),
		('updater', '40001', n_40001), ('updater', 'missed', n_miss), ('updater', 'gave_up', n_gave_up),
		('updater', 'max_ms', max_ms);
END
\$\$;

-- reports through the partitioned table; day 4 ago is closed and nothing
-- but passes writes it: 60 rows a customer, $per_day in all, always
CREATE PROCEDURE wl_reporter() LANGUAGE plpgsql AS \$\$
DECLARE
	d0 timestamptz := (SELECT day0 FROM wl_t0);
	n bigint := 0;
	bad bigint := 0;
	c int;
	k bigint;
	s bigint;
	t timestamptz;
	max_ms float8 := 0;
BEGIN
	WHILE NOT (SELECT stop FROM wl_ctl) LOOP
		c := floor(random() * $customers)::int;
		t := clock_timestamp();
		SELECT count(*), sum(length(pad)) INTO k, s FROM events WHERE cid = c;
		SELECT count(*) INTO k FROM events
		WHERE cid = c AND ts >= d0 - interval '4 days' AND ts < d0 - interval '3 days';
		IF k <> $per_day / $customers THEN
			bad := bad + 1;
			INSERT INTO wl_log (what) VALUES (format('report: customer %s has %s rows on day 4', c, k));
		END IF;
		SELECT count(*) INTO k FROM events WHERE ts >= d0 - interval '4 days' AND ts < d0 - interval '3 days';
		IF k <> $per_day THEN
			bad := bad + 1;
			INSERT INTO wl_log (what) VALUES (format('report: day 4 has %s rows', k));
		END IF;
		max_ms := greatest(max_ms, 1000 * extract(epoch FROM clock_timestamp() - t));
		n := n + 1;
		COMMIT;
		PERFORM pg_sleep(0.01);
	END LOOP;
	INSERT INTO wl_stats VALUES ('reporter', 'reports', n), ('reporter', 'wrong_counts', bad),
		('reporter', 'max_ms', max_ms);
END
\$\$;

-- late rows into days 1 to 3 ago, through the partitioned table
CREATE PROCEDURE wl_backfill() LANGUAGE plpgsql AS \$\$
DECLARE
	d0 timestamptz := (SELECT day0 FROM wl_t0);
	n bigint := 0;
	d int;
	t timestamptz;
	max_ms float8 := 0;
BEGIN
	WHILE NOT (SELECT stop FROM wl_ctl) LOOP
		d := 1 + floor(random() * 3)::int;
		t := clock_timestamp();
		WITH ins AS (
			INSERT INTO events
			SELECT nextval('wl_bf_id'), floor(random() * $customers)::int,
				d0 - d * interval '1 day' + random() * interval '23 hours', repeat(md5(random()::text), 3)
			RETURNING *)
		INSERT INTO ledger SELECT * FROM ins;
		max_ms := greatest(max_ms, 1000 * extract(epoch FROM clock_timestamp() - t));
		n := n + 1;
		COMMIT;
		PERFORM pg_sleep(0.2);
	END LOOP;
	INSERT INTO wl_stats VALUES ('backfill', 'rows', n), ('backfill', 'max_ms', max_ms);
END
\$\$;

-- waits (up to secs) until an archive_cluster worker holds ROW EXCLUSIVE on
-- leaf (a pass in it); logs what it saw in wl_log
CREATE PROCEDURE wl_wait_worker_on(leaf text, secs float8) LANGUAGE plpgsql AS \$\$
DECLARE
	deadline timestamptz := clock_timestamp() + secs * interval '1 s';
	seen boolean;
BEGIN
	LOOP
		seen := EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE a.backend_type = 'archive_cluster worker' AND l.locktype = 'relation'
			  AND l.relation = leaf::regclass AND l.mode = 'RowExclusiveLock' AND l.granted);
		EXIT WHEN seen OR clock_timestamp() > deadline;
		COMMIT;
		PERFORM pg_sleep(0.005);
	END LOOP;
	INSERT INTO wl_log (what) VALUES (CASE WHEN seen THEN 'worker seen in ' ELSE 'worker not seen in ' END || leaf);
END
\$\$;
VACUUM ANALYZE events;
VACUUM ANALYZE ledger;
});

# the leaf of day $d (days ago; negative: ahead)
my %leaf = split /[|\n]/, $node->safe_psql('postgres',
	"SELECT d, 'events_p' || to_char(day0 - d * interval '1 day', 'YYYY_MM_DD') FROM wl_t0, generate_series(-4, $days) d");
is( $node->safe_psql('postgres',
		"SELECT string_agg(partition_tablename, ',' ORDER BY partition_tablename) FROM partman.show_partitions('public.events', p_include_default => true)"),
	join(',', 'events_default', map { $leaf{$_} } reverse(-2 .. $days)),
	"pg_partman made the daily partitions, $days days ago to two days ahead, and a DEFAULT one");

# the average number of pages that a customer's rows are on in $leaf
sub pages_per_key
{
	my ($leaf) = @_;
	return $node->safe_psql('postgres',
		"SELECT round(avg(pages), 2) FROM (SELECT cid, count(DISTINCT (ctid::text::point)[0]) AS pages FROM $leaf GROUP BY cid) k"
	);
}

my %before = map { $_ => pages_per_key($leaf{$_}) } (1 .. $days);
cmp_ok($before{$_}, '>=', 50, "before: each customer's rows of $leaf{$_} on $before{$_} pages on average")
  foreach (1 .. $days);

# --- the workload

my $log_offset = -s $node->logfile;
my $t_start = time;
my @sessions;
foreach my $call ("wl_writer('writer1')", "wl_writer('writer2')", 'wl_updater()', 'wl_reporter()',
	'wl_backfill()')
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->query_until(qr/started/, "\\echo started\nCALL $call;\n");
	push @sessions, [ $call, $s ];
}
sleep(1);

# registered once, with the workload going on
$node->safe_psql('postgres', register_sql('public.events', mode => 'partitioned'));
my $registered = time;

# one call of pg_partman's maintenance (with $sql before it, in its own
# transaction), then a VACUUM of the leaves (what autovacuum would do)
my ($maintenance_calls, $maintenance_max) = (0, 0);
sub maintenance
{
	my ($sql) = @_;
	my $t = time;
	$node->safe_psql('postgres',
		"SET client_min_messages = warning;\n"
		  . ($sql // '')
		  . "CALL partman.run_maintenance_proc();\n"
		  . "VACUUM (SKIP_LOCKED, TRUNCATE false) events;\n");
	$maintenance_calls++;
	$maintenance_max = time - $t if time - $t > $maintenance_max;
}

# retention dropping day $d ago (and older): whether it had a row in
# archive_cluster_leaves just before, and its OID
my (%dropped_oid, %had_state);
sub drop_day
{
	my ($d, $wait_for_pass) = @_;
	my $leaf = $leaf{$d};
	$dropped_oid{$d} = $node->safe_psql('postgres', "SELECT '$leaf'::regclass::oid");
	$node->safe_psql('postgres', "CALL wl_wait_worker_on('$leaf', 8)") if $wait_for_pass;
	$had_state{$d} = $node->safe_psql('postgres',
		"SELECT count(*) FROM archive_cluster_leaves WHERE leaf = $dropped_oid{$d}");
	maintenance(
		"UPDATE partman.part_config SET retention = '@{[ $d - 1 ]} days', retention_keep_table = false WHERE parent_table = 'public.events';\n"
	);
}

my @ahead_before = map {
	$node->safe_psql('postgres', "SELECT to_regclass('$leaf{$_}') IS NULL")
} (-3, -4);
is(join(',', @ahead_before), 't,t', 'the partitions 3 and 4 days ahead do not exist yet');

# day 7 ago, while the worker passes it (its first pass)
drop_day(7, 1);
sleep(1.5);
# premake 4: two more partitions ahead
maintenance("UPDATE partman.part_config SET premake = 4 WHERE parent_table = 'public.events';\n");
# day 6 ago, while the worker passes it again (its tail, after the VACUUM)
drop_day(6, 1);
sleep(2);
maintenance();
sleep(2);
# day 5 ago, settled by now
drop_day(5, 0);
while (time - $t_start < $workload_secs)
{
	sleep(2.5);
	maintenance();
}

# --- the workload stops

$node->safe_psql('postgres', 'UPDATE wl_ctl SET stop = true');
foreach my $session (@sessions)
{
	my ($call, $s) = @$session;
	$s->quit;
	is($s->{stderr}, '', "CALL $call: no error");
}
my $workload_time = time - $t_start;

# the worker goes on with what is due (a VACUUM, then tail passes)
# until nothing changes for 3 s
$node->safe_psql('postgres', 'VACUUM (TRUNCATE false) events');
my ($state, $same) = ('', 0);
my $quiet_sql = q{
SELECT coalesce(sum(passes), 0) || ':' || bool_and(NOT closed OR (settled_at IS NOT NULL AND NOT resumes))
	|| ':' || (SELECT count(*) FROM archive_cluster_progress)
FROM archive_cluster_partitions('events')};
for (my $i = 0; $i < 60 && $same < 6; $i++)
{
	sleep(0.5);
	my $now = $node->safe_psql('postgres', $quiet_sql);
	$same = ($now eq $state && $now =~ /:(?:t|true):0$/) ? $same + 1 : 0;
	$state = $now;
}
is($same, 6, "the worker settles every closed leaf ($state)");

# --- 1. no lock wait of 1 s or more, no error

my $log = slurp_file($node->logfile, $log_offset);
my @waits = $log =~ /^.*still waiting for.*$/mg;
is(scalar(@waits), 0, 'no lock wait of 1 s or more (log_lock_waits)')
  or diag(join("\n", @waits));
my @errors = $log =~ /^.*(?:ERROR|FATAL|PANIC):.*$/mg;
is(scalar(@errors), 0, 'no ERROR in the server log') or diag(join("\n", @errors));
my @warnings = $log =~ /^.*WARNING:.*$/mg;
diag("warnings in the log:\n" . join("\n", @warnings)) if @warnings;
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM archive_cluster_runs WHERE relation = 'events'::regclass AND error IS NOT NULL"),
	'0', 'no error in the run history')
  or diag($node->safe_psql('postgres',
		"SELECT started_by || ': ' || error FROM archive_cluster_runs WHERE error IS NOT NULL"));

my %stat = map { my ($k, $v) = split /\|/; $k => $v } split /\n/,
  $node->safe_psql('postgres', "SELECT session || '.' || stat, n FROM wl_stats");

# --- 2. no row lost or duplicated

my $lo = $node->safe_psql(
	'postgres', q{
SELECT min(i.child_start_time) FROM partman.show_partitions('public.events') p,
	LATERAL partman.show_partition_info(p.partition_schemaname || '.' || p.partition_tablename,
		p_parent_table => 'public.events') i});
is($lo, $node->safe_psql('postgres', "SELECT day0 - interval '4 days' FROM wl_t0"),
	'retention left the days from 4 days ago on');
my $expected = "SELECT * FROM ledger WHERE ts >= '$lo'";
my ($exp_state, $dropped_rows) = split /\|/, $node->safe_psql('postgres',
	"SELECT count(*) || ':' || sum(hashtext(e::text)::bigint), (SELECT count(*) FROM ledger WHERE ts < '$lo') FROM ($expected) e");
my $rows = $node->safe_psql('postgres', "SELECT count(*) || ':' || sum(hashtext(e::text)::bigint) FROM events e");
is($rows, $exp_state, 'the rows are the ledger\'s rows in the partitions that remain (count:checksum)');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ((($expected) EXCEPT ALL (SELECT * FROM events)) UNION ALL ((SELECT * FROM events) EXCEPT ALL ($expected))) d"
	),
	'0',
	'no row differs from the ledger, either way');
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM events'), '0', 'no duplicate id');
is($node->safe_psql('postgres', 'SELECT count(*) FROM events_default'), '0', 'no row in the DEFAULT partition');
is($stat{'updater.missed'}, 0, 'no update missed its row');
is($stat{'updater.gave_up'}, 0, 'every update that met a moved row went through when retried');
is($stat{'reporter.wrong_counts'}, 0, "the reports always counted day 4's rows right ($stat{'reporter.reports'} reports)")
  or diag($node->safe_psql('postgres', 'SELECT string_agg(what, E\'\n\' ORDER BY at) FROM wl_log'));

# --- 3. the closed leaves that remain converged

my @closed = split /\n/, $node->safe_psql(
	'postgres', q{
SELECT leaf, passes, settled_at IS NOT NULL, resumes, closed_by
FROM archive_cluster_partitions('events') WHERE closed ORDER BY leaf::text});
my %by_name = reverse %leaf;
my @report;
foreach my $row (@closed)
{
	my ($leaf, $passes, $settled, $resumes, $closed_by) = split /\|/, $row;
	my $rows_in = $node->safe_psql('postgres', "SELECT count(*) FROM $leaf");
	if ($rows_in == 0)
	{
		is("$settled $resumes", 't f', "$leaf (closed by $closed_by, empty): settled");
		next;
	}
	ok($passes >= 1 && $settled eq 't' && $resumes eq 'f',
		"$leaf: passed ($passes passes), settled, not resuming");
	my $worker_passes = $node->safe_psql('postgres',
		"SELECT count(*) FROM archive_cluster_runs WHERE relation = 'events'::regclass AND kind = 'pass' AND started_by = 'worker' AND detail LIKE 'leaf public.$leaf (%'"
	);
	cmp_ok($worker_passes, '>=', 1, "$leaf: $worker_passes passes by the worker in the run history");
	my $ppk = pages_per_key($leaf);
	my ($ideal, $per_key) = split /\|/, $node->safe_psql('postgres',
		"SELECT ceil(count(*)::numeric / count(DISTINCT cid) * (avg(pg_column_size(e.*)) + 4) / 8168), round(count(*)::numeric / count(DISTINCT cid), 1) FROM $leaf e"
	);
	cmp_ok($ppk, '<=', 1.5 * $ideal + 1,
		"$leaf: each customer's $per_key rows on $ppk pages on average, ideal $ideal");
	my $d = $by_name{$leaf};
	cmp_ok($ppk * 3, '<=', $before{$d}, "$leaf: $before{$d} pages per customer before, $ppk after")
	  if defined $d && defined $before{$d};
	push @report, "$leaf: $rows_in rows, $passes passes, pages per customer "
	  . (defined $d ? "$before{$d} -> " : '') . "$ppk (ideal $ideal)";
}
cmp_ok(scalar(@report), '>=', 3, 'at least three closed leaves with rows remain');

# --- 4. partitions premade after the registration, listed with no call

is( $node->safe_psql('postgres',
		"SELECT string_agg(leaf::text || ' ' || closed, ',' ORDER BY leaf::text) FROM archive_cluster_partitions('events') WHERE leaf::text IN ('$leaf{-3}', '$leaf{-4}')"
	),
	"$leaf{-3} false,$leaf{-4} false",
	'the partitions premade after the registration are listed, open');

# --- 5. dropped leaves left no state

foreach my $d (7, 6, 5)
{
	is( $node->safe_psql('postgres',
			"SELECT (SELECT count(*) FROM pg_class WHERE oid = $dropped_oid{$d}) || ' ' || (SELECT count(*) FROM archive_cluster_leaves WHERE leaf = $dropped_oid{$d})"
		),
		'0 0',
		"$leaf{$d}: dropped by retention (it had $had_state{$d} row in archive_cluster_leaves), no row left");
}
cmp_ok($had_state{6} + $had_state{5}, '>=', 1, 'retention dropped leaves that passes had recorded');
is( $node->safe_psql('postgres',
		'SELECT count(*) FROM archive_cluster_leaves l WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = l.leaf)'),
	'0', 'no row of archive_cluster_leaves names a relation that is gone');

# --- 6. amcheck

if ($amcheck)
{
	amcheck_clean($node, 'postgres', 'the end', split /\n/,
		$node->safe_psql('postgres', "SELECT leaf::text FROM archive_cluster_partitions('events') ORDER BY leaf::text"));
}

# --- what happened

my $runs = $node->safe_psql(
	'postgres', q{
SELECT count(*) || ' passes (' || count(*) FILTER (WHERE detail LIKE '%(first pass)%') || ' first, '
	|| count(*) FILTER (WHERE detail LIKE '%(tail)%') || ' tail, '
	|| count(*) FILTER (WHERE detail LIKE '%(resumed)%') || ' resumed, '
	|| count(*) FILTER (WHERE detail LIKE '%gave way%') || ' gave way), '
	|| coalesce(sum(rows_moved), 0) || ' rows rewritten, longest ' || coalesce(max(duration)::text, '-')
FROM archive_cluster_runs WHERE relation = 'events'::regclass AND kind = 'pass'});
diag("workload: "
	  . sprintf('%.1f s', $workload_time)
	  . "; writers $stat{'writer1.rows'} + $stat{'writer2.rows'} rows, backfill $stat{'backfill.rows'} rows, "
	  . "$stat{'updater.updates'} updates ($stat{'updater.old_updates'} in closed days, $stat{'updater.40001'} times 40001), "
	  . "$stat{'reporter.reports'} reports");
diag("longest statement (ms): writers $stat{'writer1.max_ms'}, $stat{'writer2.max_ms'}; updater $stat{'updater.max_ms'}; "
	  . "reports $stat{'reporter.max_ms'}; backfill $stat{'backfill.max_ms'}; "
	  . sprintf('%d maintenance calls (with VACUUM), longest %.0f', $maintenance_calls, 1000 * $maintenance_max));
diag("rows: $rows (count:checksum), $dropped_rows dropped by retention");
diag("passes: $runs");
diag("the passes:\n" . $node->safe_psql('postgres', q{
SELECT string_agg(to_char(started_at, 'HH24:MI:SS.MS') || ' ' || started_by || ' ' || duration || ' ' || rows_moved || ' rows, '
	|| rows_busy || ' busy: ' || split_part(detail, ';', 1), E'\n' ORDER BY run_id)
FROM archive_cluster_runs WHERE relation = 'events'::regclass AND kind = 'pass'}));
diag("drops: " . join(', ', map { "$leaf{$_} (had state: $had_state{$_})" } (7, 6, 5)));
diag($node->safe_psql('postgres', "SELECT string_agg(to_char(at, 'HH24:MI:SS.MS') || ' ' || what, E'\n' ORDER BY at) FROM wl_log"));
diag(join("\n", @report));
diag("pass log lines:\n" . join("\n", $log =~ /^.*archive_cluster: clustered partition.*$/mg));

$node->stop;
done_testing();
