# Logical replication of a registered table: the publisher publishes its
# two tiers, a subscriber (registered too, its worker on) replays the
# publisher's runs and compactions and never moves rows itself; the
# publisher's later updates and deletes of archived rows arrive; a run or
# compaction named on the subscriber is refused, archive_cluster_run()
# without a relation skips the table, archive_cluster_tables shows the
# subscription.  Unregistering: refused on the subscriber while its archive
# holds rows; on the publisher it moves the rows back as deletes and
# inserts (a WARNING says what subscribers must do), the subscriber then
# unregisters too, and replication goes on under the table's own name.
# The same in table mode (a publication of t carries its child t_archive).
# On the publisher alone: a run refused while the current tier's deletes
# are published but the archive's inserts are not (a publication made
# before registering); unregistering refused while the archive's deletes
# are not published, or when a trigger keeps archived rows from being
# deleted.  Last, no launcher in a server started in binary-upgrade mode
# (pg_upgrade's).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ArchiveClusterTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pub = new_node(
	'pub',
	init => { allows_streaming => 'logical' },
	'archive_cluster.enabled' => 'off');
my $sub = new_node('sub', 'archive_cluster.naptime' => 1);

my $table = "CREATE EXTENSION archive_cluster;\n"
  . table_sql('t', id => 'int PRIMARY KEY', columns => 'pad text NOT NULL', batch_rows => 1000);
$pub->safe_psql('postgres', $table);
$sub->safe_psql('postgres', $table);
# the subscriber's worker logs at DEBUG1 why it leaves the table alone
$sub->safe_psql('postgres', 'ALTER DATABASE postgres SET log_min_messages = debug1');

# the INSERT of rows $from to $to into $table, $age old (one more second
# per id), pads of $pad
sub rows_sql
{
	my ($table, $from, $to, $age, $pad) = @_;
	return
	    "INSERT INTO $table SELECT g, g % 100, now() - interval '$age' + g * interval '1 s', repeat('$pad', g % 50)\n"
	  . "FROM generate_series($from, $to) g;\n";
}

$pub->safe_psql('postgres',
	rows_sql('t', 1, 5000, '2 days', 'p') . "CREATE PUBLICATION p FOR TABLE t_current, t_archive;\n");
my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION s CONNECTION '$connstr' PUBLICATION p");
$sub->wait_for_subscription_sync($pub, 's');

my $state_sql = state_sql('t', with => ['tiers']);
sub same_state
{
	my ($what) = @_;
	$pub->wait_for_catchup('s');
	my $p = $pub->safe_psql('postgres', $state_sql);
	my $s = $sub->safe_psql('postgres', $state_sql);
	is($s, $p, "$what: the subscriber has the publisher's rows, in the same tiers ($p)");
	return $p;
}
same_state('initial copy');

# the publisher archives (a run, more rows, a second run, a compaction)
$pub->safe_psql('postgres', q{SELECT status FROM archive_cluster_run('t', force => true)});
$pub->safe_psql(
	'postgres', rows_sql('t', 5001, 8000, '1 day', 'q') . q{
SELECT status FROM archive_cluster_run('t', force => true);
SELECT status FROM archive_cluster_compact('t', force => true);
});
like(same_state('after two runs and a compaction'), qr/^8000:-?\d+:0\/8000$/,
	'every row archived on both');

# archived rows updated and deleted on the publisher, through its view
$pub->safe_psql(
	'postgres', q{
UPDATE t SET pad = 'changed' WHERE id % 97 = 0;
DELETE FROM t WHERE id % 89 = 0;
});
same_state('after updates and deletes of archived rows');

# the subscriber's worker leaves the table alone, and says why
$sub->wait_for_log(qr/skipping "t": a logical replication subscription writes into its tables/);

# named on the subscriber: refused; without a relation: skipped
my ($rc, $out, $err) = $sub->psql('postgres',
	q{SELECT status FROM archive_cluster_run('t', force => true)});
like($err, qr/cannot move rows of "t": its table "t_current" is a logical replication target/,
	'a run named on the subscriber is refused');
like($err, qr/HINT:  Archive on the publisher/, '... with a hint');
($rc, $out, $err) = $sub->psql('postgres',
	q{SELECT status FROM archive_cluster_compact('t', force => true)});
like($err, qr/cannot move rows of "t"/, 'a compaction named on the subscriber is refused');
is( $sub->safe_psql('postgres', q{SELECT status FROM archive_cluster_run(force => true)}),
	'skipped: logical replication target',
	'archive_cluster_run() without a relation skips it');
is( $sub->safe_psql('postgres',
		q{SELECT subscriptions FROM archive_cluster_tables WHERE relation = 't'::regclass}),
	'{s}', 'archive_cluster_tables shows the subscription');
is( $pub->safe_psql('postgres',
		q{SELECT subscriptions IS NULL FROM archive_cluster_tables WHERE relation = 't'::regclass}),
	't', '... and none on the publisher');

# the override is the superuser's
$sub->safe_psql('postgres', 'CREATE ROLE owner_role');
($rc, $out, $err) = $sub->psql('postgres',
	q{SET ROLE owner_role; SET archive_cluster.allow_on_subscriber = on});
like($err, qr/permission denied to set parameter "archive_cluster.allow_on_subscriber"/,
	'archive_cluster.allow_on_subscriber: superuser only');
($rc, $out, $err) = $sub->psql('postgres',
	q{SET archive_cluster.allow_on_subscriber = on; SELECT status FROM archive_cluster_run('t', force => true)});
is($rc, 0, 'a superuser with archive_cluster.allow_on_subscriber on: the run is not refused');
unlike($err, qr/cannot move rows/, '... no refusal');

# unregistering: on the subscriber first, refused
($rc, $out, $err) = $sub->psql('postgres', q{SELECT archive_cluster_unregister('t')});
like($err, qr/cannot unregister "t": subscription "s" writes into its table "t_archive"/,
	'unregistering on the subscriber first is refused');
like($err, qr/HINT:  Unregister the table on the publisher first/, '... with a hint');

# on the publisher: the rows go back as deletes and inserts, with a warning
($rc, $out, $err) = $pub->psql('postgres', q{SELECT archive_cluster_unregister('t')});
is($rc, 0, 'unregistering on the publisher');
like($err, qr/WARNING:  "t" was published by "p": subscribers must unregister it too/,
	'... warns what subscribers must do');
$pub->wait_for_catchup('s');
my $pubsum = tier_state($pub, 'postgres', 't');
is( $sub->safe_psql('postgres',
		q{SELECT (SELECT count(*) FROM t_archive) || ' ' || (SELECT count(*) || ':' || sum(hashtext(t::text)::bigint) FROM t_current t)}),
	"0 $pubsum", 'the subscriber replayed the move: its archive empty, every row in its current table once');
$sub->safe_psql('postgres', q{SELECT archive_cluster_unregister('t')});

# replication goes on under the table's own name
$pub->safe_psql('postgres', q{INSERT INTO t VALUES (9001, 1, now(), 'after'); UPDATE t SET pad = 'again' WHERE id = 2});
$pub->wait_for_catchup('s');
is(tier_state($sub, 'postgres', 't'), tier_state($pub, 'postgres', 't'),
	'after both unregistered: the same rows');

# table mode: a publication of tm (made after registering) carries its
# child tm_archive; runs and a compaction replicate, unregistering too
my $tm = table_sql('tm', id => 'int PRIMARY KEY', columns => 'pad text NOT NULL', batch_rows => 1000,
	mode => 'table');
$pub->safe_psql('postgres', $tm);
$sub->safe_psql('postgres', $tm);
$pub->safe_psql(
	'postgres', rows_sql('tm', 1, 4000, '2 days', 'p') . q{
SELECT status FROM archive_cluster_run('tm', force => true);
CREATE PUBLICATION ptm FOR TABLE tm;
});
is( $pub->safe_psql('postgres', q{SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = 'ptm'}),
	'tm,tm_archive', 'table mode: the publication of tm carries tm_archive');
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION stm CONNECTION '$connstr' PUBLICATION ptm");
$sub->wait_for_subscription_sync($pub, 'stm');
my $tm_sql = state_sql('tm', mode => 'table', with => ['tiers']);
$pub->safe_psql(
	'postgres', rows_sql('tm', 4001, 6000, '1 day', 'q') . q{
SELECT status FROM archive_cluster_run('tm', force => true);
SELECT status FROM archive_cluster_compact('tm', force => true);
UPDATE tm SET pad = 'changed' WHERE id % 97 = 0;
DELETE FROM tm WHERE id % 89 = 0;
});
$pub->wait_for_catchup('stm');
my $tm_pub = $pub->safe_psql('postgres', $tm_sql);
like($tm_pub, qr/^\d+:-?\d+:0\/\d+$/, 'table mode: every row archived on the publisher');
is($sub->safe_psql('postgres', $tm_sql), $tm_pub, 'table mode: the subscriber has the same rows in the same tiers');
($rc, $out, $err) = $sub->psql('postgres', q{SELECT status FROM archive_cluster_run('tm', force => true)});
like($err, qr/cannot move rows of "tm": its table "tm" is a logical replication target/,
	'table mode: a run on the subscriber is refused');
($rc, $out, $err) = $pub->psql('postgres', q{SELECT archive_cluster_unregister('tm')});
like($err, qr/WARNING:  "tm" was published by "ptm": subscribers must unregister it too/,
	'table mode: unregistering on the publisher warns');
$pub->wait_for_catchup('stm');
is( $sub->safe_psql('postgres', q{SELECT (SELECT count(*) FROM tm_archive) || ' ' || (SELECT count(*) || ':' || sum(hashtext(tm::text)::bigint) FROM ONLY tm)}),
	'0 ' . tier_state($pub, 'postgres', 'tm'),
	'table mode: the subscriber replayed the move');
$sub->safe_psql('postgres', q{SELECT archive_cluster_unregister('tm')});
is($sub->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'tm_archive'}), '0',
	'table mode: unregistered on the subscriber too');

# on the publisher alone: a publication made before registering names the
# table, which becomes the current tier; the new archive is not in it
my $half = q{
CREATE TABLE h (id int PRIMARY KEY, cid int NOT NULL, ts timestamptz NOT NULL);
INSERT INTO h SELECT g, g % 10, now() - interval '1 day' FROM generate_series(1, 100) g;
};
$pub->safe_psql('postgres', $half . q{
CREATE PUBLICATION ph FOR TABLE h;
SELECT archive_cluster_register('h', '{cid,ts}', 'ts', '1 hour');
});
($rc, $out, $err) = $pub->psql('postgres', q{SELECT status FROM archive_cluster_run('h', force => true)});
like($err, qr/cannot move rows of "h": publication "ph" replicates deletes from "h_current" but no inserts into "h_archive"/,
	'a run whose moved rows subscribers would receive as deletes only is refused');
like($err, qr/HINT:  Publish "h_archive" too/, '... with a hint');
is($pub->safe_psql('postgres', q{SELECT count(*) FROM h_archive}), '0', '... and moved nothing');
$pub->safe_psql('postgres', q{ALTER PUBLICATION ph ADD TABLE h_archive});
is( $pub->safe_psql('postgres', q{SELECT rows_moved FROM archive_cluster_run('h', force => true)}),
	'100', 'with the archive published too, the run moves the rows');

# unregistering while the archive's deletes are not published: refused
$pub->safe_psql('postgres', q{ALTER PUBLICATION ph SET (publish = 'insert, update')});
($rc, $out, $err) = $pub->psql('postgres', q{SELECT archive_cluster_unregister('h')});
like($err, qr/cannot unregister "h": its archived rows would not reach subscribers as they move/,
	'unregistering with the archive\'s deletes unpublished is refused');
like($err, qr/DETAIL:  Publication "ph" does not replicate deletes from "h_archive"/, '... saying why');
$pub->safe_psql('postgres', q{ALTER PUBLICATION ph SET (publish = 'insert, update, delete, truncate')});

# a trigger that keeps archived rows from being deleted: refused, nothing lost
$pub->safe_psql(
	'postgres', q{
CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN CASE WHEN OLD.id % 2 = 0 THEN NULL ELSE OLD END; END$$;
CREATE TRIGGER keep BEFORE DELETE ON h_archive FOR EACH ROW EXECUTE FUNCTION keep();
});
($rc, $out, $err) = $pub->psql('postgres', q{SELECT archive_cluster_unregister('h')});
like($err, qr/cannot unregister "h": rows of "h_archive" were not deleted as they were moved back/,
	'a trigger keeping archived rows: unregistering refused');
is($pub->safe_psql('postgres', q{SELECT count(*) FROM h}), '100', '... and every row still there');
$pub->safe_psql('postgres', q{DROP TRIGGER keep ON h_archive});
($rc, $out, $err) = $pub->psql('postgres', q{SELECT archive_cluster_unregister('h')});
like($err, qr/WARNING:  "h" was published by "ph"/, 'without it: unregistered, with the warning');
is($pub->safe_psql('postgres', q{SELECT relkind || count(*) OVER () FROM pg_class WHERE relname = 'h'}), 'r1',
	'... h a table again');
is($pub->safe_psql('postgres', q{SELECT count(*) FROM h}), '100', '... with every row');

# binary-upgrade mode (as pg_upgrade starts servers): no launcher
my $launchers = q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'archive_cluster launcher'};
is($sub->safe_psql('postgres', $launchers), '1', 'a launcher in a normal start');
$sub->stop;
command_ok(
	[ 'pg_ctl', '-D', $sub->data_dir, '-l', $sub->logfile, '-o', '-b', '-w', 'start' ],
	'started in binary-upgrade mode');
$sub->_update_pid(1);	# so that stop() stops it
# the launcher starts within moments of a normal start: watch for 5 s
my $seen = 0;
for (1 .. 20)
{
	$seen += $sub->safe_psql('postgres', $launchers);
	select(undef, undef, undef, 0.25);
}
is($seen, 0, 'no launcher in binary-upgrade mode (5 s watched)');
$sub->stop;
$pub->stop;

done_testing();
