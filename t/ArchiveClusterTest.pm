# The set-up that the TAP tests of archive_cluster share: nodes with the
# library preloaded, registered tables, the state of their two tiers,
# amcheck, runs held at a phase by archive_cluster.debug_pause, crashes.
# Found by the tests through "use lib" on their own folder (t/).

package ArchiveClusterTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(
  new_node
  reload_with
  alter_system
  table_sql
  register_sql
  register_table
  state_sql
  tiers_sql
  tier_state
  tier_counts
  wait_archived
  amcheck_clean
  hold_pause
  release_pause
  start_paused
  wait_paused
  paused_pid
  crash_backend
  restart_immediate
);

# The advisory lock (class 1094930497, this object id) for which a backend
# waits at each phase of archive_cluster.debug_pause
my %pause_objid = (locked => 1, deleted => 2, before_commit => 3);

# A setting's value as postgresql.conf and ALTER SYSTEM take it: numbers and
# booleans as they are, anything else quoted
sub conf_value
{
	my ($value) = @_;
	return $value if $value =~ /^(?:-?[0-9]+(?:\.[0-9]+)?|on|off|true|false)$/;
	return "'" . ($value =~ s/'/''/gr) . "'";
}

# new_node($name, @settings): a new node, initialized, started, with
# shared_preload_libraries = 'archive_cluster' and then the settings, given
# as name => value pairs (kept in their order), in its postgresql.conf.
# Among the pairs, init => {...} is passed to init(), install_path => ...
# to new(), and shared_preload_libraries replaces the default.
sub new_node
{
	my ($name, @settings) = @_;
	my (%new, %init, @conf);
	my $preload = 'archive_cluster';

	while (my ($key, $value) = splice(@settings, 0, 2))
	{
		if ($key eq 'init')
		{
			%init = %$value;
		}
		elsif ($key eq 'install_path')
		{
			$new{install_path} = $value;
		}
		elsif ($key eq 'shared_preload_libraries')
		{
			$preload = $value;
		}
		else
		{
			push @conf, "$key = " . conf_value($value);
		}
	}
	my $node = PostgreSQL::Test::Cluster->new($name, %new);
	$node->init(%init);
	$node->append_conf('postgresql.conf',
		join("\n", "", "shared_preload_libraries = " . conf_value($preload), @conf, ""));
	$node->start;
	return $node;
}

# reload_with($node, @settings): appends the settings (name => value pairs)
# to postgresql.conf and reloads the configuration
sub reload_with
{
	my ($node, @settings) = @_;
	while (my ($key, $value) = splice(@settings, 0, 2))
	{
		$node->append_conf('postgresql.conf', "$key = " . conf_value($value));
	}
	$node->reload;
}

# alter_system($node, @settings): ALTER SYSTEM SET of the settings (name =>
# value pairs; RESET where the value is undef), then a reload
sub alter_system
{
	my ($node, @settings) = @_;
	my $sql = '';
	while (my ($key, $value) = splice(@settings, 0, 2))
	{
		$sql .= defined $value
		  ? "ALTER SYSTEM SET $key = " . conf_value($value) . ";\n"
		  : "ALTER SYSTEM RESET $key;\n";
	}
	$node->safe_psql('postgres', $sql);
	$node->reload;
}

# register_sql($table, %opts): the call of archive_cluster_register() that
# the tests make, cluster_by {cid,ts}, age_column ts, hot_window (default
# 1 hour), and batch_rows and mode where given
sub register_sql
{
	my ($table, %opts) = @_;
	my $sql =
	    "SELECT archive_cluster_register('"
	  . ($table =~ s/'/''/gr)
	  . "', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '"
	  . ($opts{hot_window} // '1 hour') . "'";
	$sql .= ", batch_rows => $opts{batch_rows}" if defined $opts{batch_rows};
	$sql .= ", mode => '$opts{mode}'" if defined $opts{mode};
	return "$sql);\n";
}

# table_sql($table, %opts): the SQL that creates $table (id, cid int NOT
# NULL, ts timestamptz NOT NULL, then opts{columns}) with an index on (cid,
# ts) (not where opts{index} is 0), fills it with opts{rows} (what follows
# INSERT INTO $table, or a list of them, one INSERT each) and registers it
# (register_sql with %opts).  opts{id}: the id column's type and
# constraint, default bigint PRIMARY KEY.
sub table_sql
{
	my ($table, %opts) = @_;
	my $columns = join(', ',
		'id ' . ($opts{id} // 'bigint PRIMARY KEY'),
		'cid int NOT NULL', 'ts timestamptz NOT NULL',
		defined $opts{columns} ? ($opts{columns}) : ());
	my $sql = "CREATE TABLE $table ($columns);\n";
	$sql .= "CREATE INDEX ON $table (cid, ts);\n" if $opts{index} // 1;
	$sql .= "INSERT INTO $table $_;\n"
	  foreach (ref $opts{rows} ? @{ $opts{rows} } : defined $opts{rows} ? ($opts{rows}) : ());
	return $sql . register_sql($table, %opts);
}

# register_table($node, $db, $table, %opts): runs table_sql($table, %opts)
sub register_table
{
	my ($node, $db, $table, %opts) = @_;
	return $node->safe_psql($db, table_sql($table, %opts));
}

# The current tier and the archive of the registered $view: <view>_current
# and <view>_archive, or in table mode (mode => 'table') ONLY <view> and
# <view>_archive (a quoted name gets its suffix inside the quotes)
sub tier_names
{
	my ($view, %opts) = @_;
	my ($head, $quote) = $view =~ /^(.*?)("?)$/;
	my $archive = "${head}_archive$quote";
	return (($opts{mode} // 'view') eq 'table' ? "ONLY $view" : "${head}_current$quote", $archive);
}

# tiers_sql($view, %opts): the SQL of "rows in the current tier/rows in the
# archive" (mode => 'table': see tier_names)
sub tiers_sql
{
	my ($view, %opts) = @_;
	my ($current, $archive) = tier_names($view, %opts);
	return "SELECT (SELECT count(*) FROM $current) || '/' || (SELECT count(*) FROM $archive)";
}

# state_sql($view, %opts): the SQL of "count:checksum" of the rows read
# through $view, then ":" and each part that opts{with} lists, in its order:
#   ids      the number of distinct values of each key column,
#   tiers    rows in the current tier/rows in the archive,
#   in_both  the number of rows of the current tier whose key is in the
#            archive too, for each key column.
# opts{keys}: the key columns (default id); opts{mode}: see tier_names.
sub state_sql
{
	my ($view, %opts) = @_;
	my ($current, $archive) = tier_names($view, %opts);
	my @keys = @{ $opts{keys} // ['id'] };
	my @parts = ('count(*)', 'sum(hashtext(v::text)::bigint)');
	foreach my $with (@{ $opts{with} // [] })
	{
		if ($with eq 'ids')
		{
			push @parts, map { "count(DISTINCT $_)" } @keys;
		}
		elsif ($with eq 'tiers')
		{
			push @parts,
			  "(SELECT count(*) FROM $current) || '/' || (SELECT count(*) FROM $archive)";
		}
		elsif ($with eq 'in_both')
		{
			push @parts,
			  map { "(SELECT count(*) FROM $current c JOIN $archive a USING ($_))" } @keys;
		}
		else
		{
			die "state_sql: unknown part $with";
		}
	}
	return 'SELECT ' . join(" || ':' || ", @parts) . " FROM $view v";
}

# tier_state($node, $db, $view, %opts): the result of state_sql($view, %opts)
sub tier_state
{
	my ($node, $db, $view, %opts) = @_;
	return $node->safe_psql($db, state_sql($view, %opts));
}

# tier_counts($node, $db, $view, %opts): the result of tiers_sql($view, %opts)
sub tier_counts
{
	my ($node, $db, $view, %opts) = @_;
	return $node->safe_psql($db, tiers_sql($view, %opts));
}

# wait_archived($node, $db, $view, $rows): waits until <view>_archive holds
# $rows rows; poll_query_until's result
sub wait_archived
{
	my ($node, $db, $view, $rows) = @_;
	return $node->poll_query_until($db, "SELECT count(*) = $rows FROM ${view}_archive");
}

# amcheck_clean($node, $db, $what, @tables): one test that verify_heapam()
# reports nothing for each table, and one that bt_index_check(heapallindexed)
# passes for each of its indexes (all but the archive_cluster_guard ones,
# which amcheck cannot check), in OID order.  Test names: "$what:
# verify_heapam(<table>) reports nothing" and "$what: bt_index_check(<index>,
# heapallindexed)", or the two sprintf formats of $what where it is an array.
sub amcheck_clean
{
	my ($node, $db, $what, @tables) = @_;
	my ($heap_name, $index_name) =
	  ref $what
	  ? @$what
	  : ("$what: verify_heapam(%s) reports nothing", "$what: bt_index_check(%s, heapallindexed)");
	foreach my $tab (@tables)
	{
		is($node->safe_psql($db, "SELECT count(*) FROM verify_heapam('$tab')"),
			'0', sprintf($heap_name, $tab));
		foreach my $idx (
			split /\n/,
			$node->safe_psql(
				$db, qq{
SELECT i.indexrelid::regclass
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
WHERE i.indrelid = '$tab'::regclass AND am.amname <> 'archive_cluster_guard'
ORDER BY 1}))
		{
			my ($ret, $out, $err) = $node->psql($db,
				"SELECT bt_index_check('$idx', heapallindexed => true)");
			is($ret, 0, sprintf($index_name, $idx)) or diag($err);
		}
	}
}

# hold_pause($node, $db, $phase): a background session holding the lock
# for which a backend paused at $phase (archive_cluster.debug_pause) waits
sub hold_pause
{
	my ($node, $db, $phase) = @_;
	my $holder = $node->background_psql($db);
	$holder->query_safe("SELECT pg_advisory_lock(1094930497, $pause_objid{$phase})");
	return $holder;
}

# release_pause($holder, $phase): lets the backends paused at $phase go on
sub release_pause
{
	my ($holder, $phase) = @_;
	$holder->query_safe("SELECT pg_advisory_unlock(1094930497, $pause_objid{$phase})");
}

# start_paused($node, $db, $phase, $sql, $test_name, @set): starts $sql in
# a session of its own (on_error_stop off) with archive_cluster.debug_pause
# = $phase and the SET statements @set, the lock of $phase held by another
# session; one test ($test_name) that it waits at $phase.  Returns the pid
# of its backend and the two sessions, the holder of the lock and the one
# of $sql.
sub start_paused
{
	my ($node, $db, $phase, $sql, $test_name, @set) = @_;
	my $holder = hold_pause($node, $db, $phase);
	my $runner = $node->background_psql($db, on_error_stop => 0);
	$runner->query_safe("SET archive_cluster.debug_pause = '$phase'");
	$runner->query_safe($_) foreach @set;
	$runner->query_until(qr/started/, "\\echo started\n$sql;\n");
	ok(wait_paused($node, $db, $phase), $test_name);
	return (paused_pid($node, $db, $phase), $holder, $runner);
}

# The query of the backends waiting at $phase (only archive_cluster
# workers where $worker is true)
sub paused_sql
{
	my ($phase, $worker) = @_;
	my $sql =
	  "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = 1094930497 AND objid = $pause_objid{$phase} AND NOT granted";
	$sql .= " AND pid IN (SELECT pid FROM pg_stat_activity WHERE backend_type = 'archive_cluster worker')"
	  if $worker;
	return $sql;
}

# wait_paused($node, $db, $phase, %opts): waits until one backend (an
# archive_cluster worker with worker => 1) waits at $phase;
# poll_query_until's result
sub wait_paused
{
	my ($node, $db, $phase, %opts) = @_;
	return $node->poll_query_until($db,
		"SELECT count(*) = 1 FROM (" . paused_sql($phase, $opts{worker}) . ") w");
}

# paused_pid($node, $db, $phase): the pid of the backend waiting at $phase
sub paused_pid
{
	my ($node, $db, $phase) = @_;
	return $node->safe_psql($db, paused_sql($phase));
}

# crash_backend($node, $db, $pid, $what, @sessions): kill -9 of backend
# $pid; waits until the postmaster has restarted every process and $db
# answers again (dies otherwise: "server did not come back after $what"),
# the sessions (ended by the restart) closed
sub crash_backend
{
	my ($node, $db, $pid, $what, @sessions) = @_;
	my $log_offset = -s $node->logfile;
	kill 'KILL', $pid;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
	eval { $_->quit; } foreach @sessions;
	$node->poll_query_until($db, 'SELECT true')
	  or die "server did not come back after $what";
}

# restart_immediate($node, @sessions): an immediate shutdown, the sessions
# (ended by it) closed, and a start
sub restart_immediate
{
	my ($node, @sessions) = @_;
	$node->stop('immediate');
	eval { $_->quit; } foreach @sessions;
	$node->start;
}

1;
