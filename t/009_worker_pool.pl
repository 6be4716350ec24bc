# The worker pool under load: 20 databases with the extension, each with a
# registered due table; max_worker_processes = 8, archive_cluster.max_workers
# = 2, naptime 1 s.
# - every table is archived within a bound derived from the scheduling
#   design (stated below), not a guess: it is computed from N, S, naptime
#   and the longest worker lifetime L measured in this run;
# - at no moment more than 2 archive_cluster workers (sampled from
#   pg_stat_activity and archive_cluster_workers every ~10 ms);
# - a parallel query meanwhile gets all the workers it plans (the
#   max_worker_processes budget: 8 = logical replication launcher 1 + our
#   launcher 1 + our 2 workers + 4 parallel workers);
# - the archive_cluster lines in the log stay below a stated bound;
# - databases without the extension see no worker start in steady state,
#   and one gets its worker at once after CREATE EXTENSION archive_cluster.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use POSIX qw(ceil floor);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $naptime = 1;        # archive_cluster.naptime, s
my $slots = 2;          # archive_cluster.max_workers
my $ndb = 20;           # databases with the extension
my $rows = 10000;       # old rows per table
my $batch_rows = 2000;  # and max_batch_rows: a pass is 5 runs of one batch
my $par = 4;            # parallel workers the test query plans

my $node = new_node(
	'pool',
	max_worker_processes => 8,
	max_parallel_workers => 8,
	max_parallel_workers_per_gather => $par,
	'archive_cluster.max_workers' => $slots,
	'archive_cluster.naptime' => $naptime,
	'archive_cluster.worker_time_slice' => 2,
	'archive_cluster.max_batch_rows' => $batch_rows,
	'archive_cluster.extension_recheck_interval' => 3600,
	# the pool's scheduling only: compaction by the worker is t/011_compaction.pl's
	'archive_cluster.compaction' => 'off',
	'archive_cluster.enabled' => 'off',
	autovacuum => 'off',
	# none: the log then holds only what the server says itself
	log_statement => 'none',
	# any index is big enough for a parallel VACUUM, any table for a parallel
	# scan: the pool's workers must use none (they would take slots of the 8)
	min_parallel_index_scan_size => 0,
	min_parallel_table_scan_size => 0);

my @dbs = map { sprintf('db%02d', $_) } 1 .. $ndb;
my @nox = ('nox1', 'nox2');

# a registered table "pay" of $rows rows older than its hot window
sub make_pay
{
	my ($db, $prefix, $suffix) = @_;
	$node->safe_psql($db,
		"$prefix\n"
		  . table_sql('pay',
			columns => 'pad text',
			rows => "SELECT g, g % 100, now() - interval '3 hours' - g * interval '1 ms', repeat('x', 40)
FROM generate_series(1, $rows) g",
			batch_rows => $batch_rows)
		  . "$suffix\n");
}

$node->safe_psql('postgres', join('', map { "CREATE DATABASE $_;\n" } @dbs, @nox));
make_pay($_, 'CREATE EXTENSION archive_cluster;', '') for @dbs;

# the parallel query: a count over a table of 1M ints in db01, 4 workers planned
my $par_settings = "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
  . "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = $par;";
$node->safe_psql(
	'db01', qq{
CREATE TABLE big AS SELECT g AS i FROM generate_series(1, 1000000) g;
ALTER TABLE big SET (parallel_workers = $par);
VACUUM ANALYZE big;
CREATE TABLE pool_sampler_stop (stop bool);
CREATE TABLE pool_samples (samples int, max_backends int, max_slots int,
	max_lifetime_s float8, max_gap_s float8, unfair int, max_helpers int);
});
like(
	$node->safe_psql('db01', "$par_settings EXPLAIN (COSTS OFF) SELECT count(*) FROM big"),
	qr/Workers Planned: $par\b/,
	"the test query plans $par parallel workers");

# every database the launcher serves is listed (postgres, nox1, nox2 and the
# 20), none has had a worker yet (archive_cluster.enabled = off)
my $nall = $ndb + @nox + 1;
ok( $node->poll_query_until(
		'db01',
		"SELECT count(*) = $nall AND max(worker_starts) = 0 FROM archive_cluster_databases"),
	"the launcher lists the $nall databases, no worker started while disabled");
# N: the databases waiting for their first worker when the pool is enabled
my $N = $node->safe_psql('db01',
	'SELECT count(*) FROM archive_cluster_databases WHERE worker_starts = 0');

# --- the sampler: a session of its own that looks every ~10 ms until told
# to stop, and keeps
# - the most archive_cluster workers in pg_stat_activity, and the most
#   pool slots in use (archive_cluster_workers);
# - the longest worker lifetime seen: a running worker's age (now -
#   last_worker_start), or an ended one's last_worker_end - last_worker_start
#   (a worker whose end was overwritten by its database's next start before
#   a look was seen running at most one gap earlier: L adds the longest gap);
# - the number of looks where a database had its second worker while
#   another had not had its first (oldest-served first forbids it).
my $sampler = $node->background_psql('db01');
$sampler->query_safe('SET max_parallel_workers_per_gather = 0');
$sampler->query_until(
	qr/sampling/, q{
\echo sampling
DO $$ -- pool sampler
DECLARE
	n int;
	nhelpers int;
	max_helpers int := 0;
	nslots int;
	age interval;
	is_unfair bool;
	t timestamptz;
	last timestamptz := NULL;
	samples int := 0;
	max_n int := 0;
	max_slots int := 0;
	max_age interval := '0';
	max_gap interval := '0';
	unfair int := 0;
BEGIN
	LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT count(*) INTO n FROM pg_stat_activity
		WHERE backend_type = 'archive_cluster worker';
		SELECT count(*) INTO nhelpers FROM pg_stat_activity p
		JOIN pg_stat_activity l ON l.pid = p.leader_pid
		WHERE l.backend_type = 'archive_cluster worker' AND p.pid <> l.pid;
		max_helpers := greatest(max_helpers, nhelpers);
		SELECT count(*) INTO nslots FROM archive_cluster_workers;
		SELECT max(CASE WHEN slot IS NOT NULL THEN clock_timestamp() - last_worker_start
						ELSE last_worker_end - last_worker_start END),
			   bool_or(worker_starts = 0) AND bool_or(worker_starts >= 2)
		INTO age, is_unfair FROM archive_cluster_databases;
		t := clock_timestamp();
		IF last IS NOT NULL THEN
			max_gap := greatest(max_gap, t - last);
		END IF;
		last := t;
		samples := samples + 1;
		max_n := greatest(max_n, n);
		max_slots := greatest(max_slots, nslots);
		max_age := greatest(max_age, age);
		IF is_unfair THEN
			unfair := unfair + 1;
		END IF;
		EXIT WHEN EXISTS (SELECT FROM pool_sampler_stop);
		PERFORM pg_sleep(0.01);
	END LOOP;
	INSERT INTO pool_samples VALUES (samples, max_n, max_slots,
		extract(epoch FROM max_age), extract(epoch FROM max_gap), unfair, max_helpers);
END
$$;
});
ok( $node->poll_query_until(
		'db01',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'DO \$\$ -- pool sampler%' AND state = 'active'"
	),
	'the sampler runs');

# --- enable the pool: t0 on the server's clock, just before the reload
my $log_offset = -s $node->logfile;
$node->safe_psql('db01', 'ALTER SYSTEM SET archive_cluster.enabled = on');
my $t0 = $node->safe_psql('db01', 'SELECT clock_timestamp(); SELECT pg_reload_conf();');
($t0) = split /\n/, $t0;
note "t0 = $t0";

# --- meanwhile, a parallel query gets every worker it plans: repeated until
# every database has had its first worker (and at least 10 times)
my ($explains, $launched_all, $overlapping) = (0, 0, 0);
my $first_round_over = 0;
while ($explains < 10 || (!$first_round_over && $explains < 500))
{
	my $out = $node->safe_psql(
		'db01', qq{
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'archive_cluster worker';
$par_settings
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM big;
SELECT count(*) = 0 FROM archive_cluster_databases WHERE worker_starts = 0;
});
	my @lines = split /\n/, $out;
	my $running = $lines[0];
	$first_round_over = $lines[-1] eq 't';
	my ($planned) = $out =~ /Workers Planned: (\d+)/;
	my ($launched) = $out =~ /Workers Launched: (\d+)/;
	$explains++;
	$overlapping++ if $running > 0;
	if (defined $planned && defined $launched && $planned == $par && $launched == $par)
	{
		$launched_all++;
	}
	else
	{
		diag("parallel query $explains with $running archive_cluster workers running:\n$out");
	}
}
note "$explains parallel queries, $overlapping started while archive_cluster workers ran";
is($launched_all, $explains,
	"every parallel query ($explains) launched the $par workers it planned");
ok($overlapping > 0,
	'some of them ran while archive_cluster workers were running');
ok($first_round_over, 'every database has had its first worker');

# --- every table archived completely, by the workers, without an error
for my $db (@dbs)
{
	wait_archived($node, $db, 'pay', $rows) or diag("$db: not archived");
}
my %first_run;    # s after t0 at which the first worker run of each table started
my ($runs, $complete, $errors) = (0, 0, 0);
for my $db (@dbs)
{
	my ($c, $a, $r, $moved, $e, $first) = split /\|/, $node->safe_psql(
		$db, qq{
SELECT (SELECT count(*) FROM pay_current), (SELECT count(*) FROM pay_archive),
	   count(*) FILTER (WHERE started_by = 'worker' AND batches > 0),
	   coalesce(sum(rows_moved) FILTER (WHERE started_by = 'worker'), 0),
	   count(*) FILTER (WHERE error IS NOT NULL OR started_by <> 'worker'),
	   extract(epoch FROM min(started_at) FILTER (WHERE started_by = 'worker') - '$t0'::timestamptz)
FROM archive_cluster_runs WHERE relation = 'pay'::regclass AND kind = 'archive'});
	$complete++ if $c == 0 && $a == $rows && $moved == $rows;
	$errors += $e;
	$runs += $r;
	$first_run{$db} = $first;
}
is($complete, $ndb, "all $ndb tables archived completely by the workers (pay_current empty, $rows rows in pay_archive)");
is($errors, 0, 'no run with an error, none but the workers\'');

# --- steady state: the databases without the extension get no worker; the
# others still get one every naptime
my $state_q = q{SELECT datname, extension, worker_starts,
	next_worker_at > now() + interval '3000 s'
FROM archive_cluster_databases ORDER BY datname};
my %before = map { my @f = split /\|/; ($f[0] => [@f]) } split /\n/,
  $node->safe_psql('db01', $state_q);
sleep(5 * $naptime);
my %after = map { my @f = split /\|/; ($f[0] => [@f]) } split /\n/,
  $node->safe_psql('db01', $state_q);
for my $db ('postgres', @nox)
{
	is( join(' ', @{ $after{$db} }[ 1 .. 3 ]),
		"absent $before{$db}[2] t",
		"$db (no extension): 'absent', next look after the recheck interval, no worker started in 5 naptimes"
	);
	is($after{$db}[2], 1, "$db had exactly one worker: the first look");
}
is( scalar(grep { $after{$_}[1] eq 'installed' && $after{$_}[2] > $before{$_}[2] } @dbs),
	$ndb,
	"the $ndb databases with the extension still get a worker each naptime");

# --- stop the sampler
$node->safe_psql('db01', 'INSERT INTO pool_sampler_stop VALUES (true)');
ok($node->poll_query_until('db01', 'SELECT count(*) = 1 FROM pool_samples'),
	'the sampler stopped');
$sampler->quit;
my ($samples, $max_backends, $max_slots, $max_life, $max_gap, $unfair, $max_helpers) = split /\|/,
  $node->safe_psql('db01', 'SELECT * FROM pool_samples');
note "$samples samples: at most $max_backends workers in pg_stat_activity, "
  . "$max_slots slots in archive_cluster_workers; longest worker lifetime seen ${max_life} s, "
  . "longest gap between looks ${max_gap} s";
ok($max_backends <= $slots && $max_backends > 0,
	"at most $slots archive_cluster workers in pg_stat_activity at any look (seen: $max_backends)");
ok($max_slots <= $slots && $max_slots > 0,
	"at most $slots slots in archive_cluster_workers at any look (seen: $max_slots)");
is($unfair, 0,
	'no database had its second worker while another waited for its first (oldest-served first)');
is($max_helpers, 0,
	'the pool workers started no parallel worker (for a query or a VACUUM) at any look');

# --- the time bound, from the design.  The launcher ticks at most naptime
# after the reload (disabled, it sleeps naptime; the reload sets its latch).
# Then the N databases waiting for their first worker (N = 23: the 20,
# and postgres, nox1 and nox2, which get their first look in the same
# round; all have last_worker_start 0, so they come before any database
# served already) are served oldest first by S slots; a slot's turn is a worker's lifetime
# (<= L) plus the launcher's reaction to its exit (the postmaster wakes the
# launcher; it never sleeps longer than naptime): <= L + naptime.  The k-th
# database (from 0) gets its worker by t1 + floor(k/S) * (L + naptime)
# (when it starts, the k-S before it have all ended), so the last by
# t1 + (ceil(N/S) - 1) * (L + naptime), and its first run starts within
# that worker's lifetime L.  Hence every table's first worker run starts
# no later than
#     t0 + naptime + ceil(N/S) * (L + naptime)
# with L the longest worker lifetime measured here (plus the sampler's
# longest gap), so the bound does not depend on the machine's speed.  (L is
# taken from the sampler: archive_cluster_databases keeps only the last
# worker of each database, by now a short check after the archiving one.)
my $L = $max_life + $max_gap;
my $turns = ceil($N / $slots);
my $bound = $naptime + $turns * ($L + $naptime);
my ($last_db) = sort { $first_run{$b} <=> $first_run{$a} } @dbs;
note sprintf(
	"N = %d databases waiting, S = %d, L = %.3f s (lifetime %.3f + gap %.3f), naptime = %d s: "
	  . "bound = naptime + ceil(N/S) * (L + naptime) = %d + %d * %.3f = %.3f s after t0; "
	  . "last first run: %s at %.3f s",
	$N, $slots, $L, $max_life, $max_gap, $naptime, $naptime, $turns, $L + $naptime,
	$bound, $last_db, $first_run{$last_db});
is( scalar(grep { $first_run{$_} ne '' && $first_run{$_} >= 0 && $first_run{$_} <= $bound } @dbs),
	$ndb,
	"every table's first worker run starts by t0 + naptime + ceil(N/S) * (L + naptime) "
	  . sprintf("(N = %d, S = %d, L = %.3f s: %.3f s)", $N, $slots, $L, $bound));

# --- a CREATE EXTENSION is noticed at once (the recheck interval is 3600 s)
make_pay('nox1', 'BEGIN; CREATE EXTENSION archive_cluster;', 'COMMIT;');
ok(wait_archived($node, 'nox1', 'pay', $rows),
	'nox1: archived after CREATE EXTENSION archive_cluster there');
is( $node->safe_psql(
		'db01',
		"SELECT string_agg(datname || ' ' || extension || ' '
			|| CASE WHEN datname = 'nox1' THEN (worker_starts >= 2)::text ELSE worker_starts::text END,
			', ' ORDER BY datname)
		 FROM archive_cluster_databases WHERE datname IN ('nox1', 'nox2')"),
	"nox1 installed true, nox2 absent 1",
	'nox1 is now served as installed (after its first look), nox2 still untouched since its first look');
my $nox1_runs = $node->safe_psql('nox1',
	"SELECT count(*) FROM archive_cluster_runs WHERE started_by = 'worker' AND batches > 0 AND error IS NULL"
	  . " AND kind = 'archive'");

# --- the log.  By design the pool writes, after t0:
#   one LOG line per worker run that moved rows ("archived N rows"): R;
#   at most one "waited longer than archive_cluster.naptime" message (LOG
#   and HINT lines) per naptime of the elapsed time E;
#   the postmaster's "parameter archive_cluster.enabled changed" line.
# So at most R + 2 * (floor(E / naptime) + 1) + 1 lines name archive_cluster.
my $E = $node->safe_psql('db01',
	"SELECT extract(epoch FROM clock_timestamp() - '$t0'::timestamptz)");
my $R = $runs + $nox1_runs;
my $log = slurp_file($node->logfile, $log_offset);
my @ours = grep { /archive_cluster/ } split /\n/, $log;
my $archived_lines = grep { /archive_cluster: archived \d+ rows of "pay" in \d+ batch/ } @ours;
my $wait_lines = grep { /waited longer than archive_cluster\.naptime/ } @ours;
my $log_bound = $R + 2 * (floor($E / $naptime) + 1) + 1;
note sprintf(
	"log: %d lines name archive_cluster (%d \"archived\", %d \"waited\") in %.1f s; "
	  . "bound R + 2 * (floor(E / naptime) + 1) + 1 = %d + 2 * %d + 1 = %d",
	scalar(@ours), $archived_lines, $wait_lines, $E, $R, floor($E / $naptime) + 1, $log_bound);
is($archived_lines, $R, "one \"archived\" LOG line per worker run that moved rows ($R)");
ok(scalar(@ours) <= $log_bound,
	"log lines naming archive_cluster: " . scalar(@ours)
	  . " <= R + 2 * (floor(E / naptime) + 1) + 1 = $log_bound")
  or diag(join("\n", @ours));
is(scalar(grep { /could not start a worker/ } @ours), 0, 'no "could not start a worker"');
my @bad = grep { /\b(WARNING|ERROR|FATAL|PANIC):/ } split /\n/, $log;
is(scalar(@bad), 0, 'no WARNING, ERROR, FATAL or PANIC in the log since t0')
  or diag(join("\n", @bad));

# --- a database whose workers end before they can report (here: a lock on
# the extension's configuration table held for 16 s, so that listing the
# registered tables fails after archive_cluster.lock_timeout, 1 s) waits
# naptime x 2^n after n such workers in a row.  Starts at about 0, 3, 8
# (then 17): at most 4 in the window, counting one in progress.  Restarted
# each naptime instead, it would get one about every 2 s (the 1 s lock wait
# and the naptime): 8.
my $locker = $node->background_psql('db02');
$locker->query_safe('BEGIN');
$locker->query_safe('LOCK TABLE archive_cluster_config IN ACCESS EXCLUSIVE MODE');
my $starts_before = $node->safe_psql('db01',
	"SELECT worker_starts FROM archive_cluster_databases WHERE datname = 'db02'");
sleep(16);
my $starts_after = $node->safe_psql('db01',
	"SELECT worker_starts FROM archive_cluster_databases WHERE datname = 'db02'");
$locker->query_safe('COMMIT');
$locker->quit;
note "db02: " . ($starts_after - $starts_before) . " worker starts in 16 s while its workers failed";
ok($starts_after - $starts_before <= 4 && $starts_after - $starts_before >= 2,
	'a database whose workers fail before reporting is retried with a backoff: 2 to 4 starts in 16 s, not 8');

$node->stop;
done_testing();
