#!/usr/bin/env bash
# The archive_cluster benchmark: the seed article's experiment, side by side.
#
# On throw-away PostgreSQL 15 servers run as the postgres OS user, each inside
# a memory cgroup (page cache charged, so the data outgrows memory as in the
# seed's region C), it grows the seed's table t(ts, id, cid, pad) (10,000
# customers, pad 0-200 characters, indexes (id) and (cid, ts), inserts with a
# 1:1 mix of updates of the last hour's rows) in steps, in four layouts:
#   plain  the table as it is;
#   sql    the seed's design in plain SQL: view + PL/pgSQL INSTEAD OF triggers
#          + a run "WITH m AS (DELETE ... RETURNING *) INSERT ... ORDER BY
#          cid, ts" every 550,000 rows;
#   ext    archive_cluster in view mode (register, then archive_cluster_run('t')
#          checked every 50,000 rows: it archives when due, ~550,000 rows);
#   tab    archive_cluster in table mode (register with mode => 'table': t
#          stays a table, t_archive its inheritance child; runs as ext);
# and at each step runs the seed's mixed workload with pgbench (10 clients;
# insert 25%, update 25%, select one 25%, select hour 15%, select all 10%),
# recording tps, average and p99 latency per request type, buffers per
# "select all", database size and archive run times.  Then the focused
# benchmarks (performance targets 2-7 of DESIGN.md), CSVs, PNG plots and a
# summary (summary.md) with every target's ratio.
#
#   sudo bench/bench.sh [--quick] [options]
#
#   --quick          1.8M rows, 2 steps, pgbench runs of 5-8 s: about 12 minutes
#   --rows N         final size (default 11,000,000)
#   --steps "A B C"  measurement steps in rows (default: 1.1M, 2.2M, 4.4M,
#                    6.6M, 8.8M, 11M scaled to --rows)
#   --duration S     seconds of each mixed pgbench run (default 60)
#   --mem SIZE       memory cgroup limit of each server (default 1G)
#   --shared-buffers SIZE   (default 128MB: 1/8 of the memory, as the seed's
#                    256MB in 2GB)
#   --layouts "plain sql ext tab"   which layouts (default all four)
#   --copy-rows N    rows of the COPY FROM benchmark (default 1,000,000)
#   --batch-rows N   archive_cluster's batch_rows (layouts ext, tab; default: its
#                    automatic threshold, distinct keys x rows per page)
#   --compaction on|off   after each run of the growth, archive_cluster_compact()
#                    (when due) and a VACUUM of the archive, as the worker does
#                    (layouts ext, tab; default on)
#   --compaction-threshold X   archive_cluster.compaction_threshold of the
#                    bench database (default: the extension's, 0.1)
#   --p99-settings "a=b[,c=d] ..."   target 5 is also measured with the run's
#                    session set so, for each of these (twice each, alternating;
#                    default "archive_cluster.run_max_wal_rate=0", none with
#                    --quick; layout ext only); the verdict is always the one
#                    with the defaults
#   --compaction-p99-settings "a=b[,c=d] ..."   target 5c is also measured
#                    with the compaction's session set so, for each of these
#                    (twice each, alternating, each after a forced run; layout
#                    ext only; default none; a lower
#                    archive_cluster.compaction_max_wal_rate than 20 lengthens
#                    the inserts' window as much); the verdict is always the
#                    one with the defaults
#   --out DIR        results directory (default /tmp/archive_cluster_bench.XXXX)
#   --port N         first port (default 5533)
#   --build          build and install archive_cluster from a copy of this
#                    tree even if an installed one exists
#   --keep           keep the data directories and raw pgbench logs
#   --docs           also copy the CSVs, PNGs and summary.md to docs/bench/quick/
#                    (with --quick) or docs/bench/full/
#
# Results: DIR/results/*.csv, *.png, summary.md; DIR/bench.log.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
args="$*"
here="$top/bench"

rows=11000000
steps=""
duration=60
oltp_duration=""
mem=1G
shared_buffers=128MB
layouts="plain sql ext tab"
copy_rows=1000000
batch_rows=""
compaction=on
compaction_threshold=""
oltp_rows=1100000
oltp_secs=20
out=""
port=5533
build=0
keep=0
docs=0
quick=0
hot_window="1 second"
run_every=550000
check_every=50000
p99_rate=500
p99_clients=4
p99_secs=15
p99_settings="archive_cluster.run_max_wal_rate=0"
p99_settings_set=0
compaction_p99_settings=""

given=""	# options given explicitly
while [ $# -gt 0 ]; do
	case "$1" in
		--quick) quick=1; shift ;;
		--rows) rows=$2; given="$given rows"; shift 2 ;;
		--steps) steps=$2; shift 2 ;;
		--duration) duration=$2; given="$given duration"; shift 2 ;;
		--mem) mem=$2; shift 2 ;;
		--shared-buffers) shared_buffers=$2; shift 2 ;;
		--layouts) layouts=$2; shift 2 ;;
		--copy-rows) copy_rows=$2; given="$given copy_rows"; shift 2 ;;
		--batch-rows) batch_rows=$2; shift 2 ;;
		--compaction) compaction=$2; shift 2 ;;
		--compaction-threshold) compaction_threshold=$2; shift 2 ;;
		--p99-settings) p99_settings=$2; p99_settings_set=1; shift 2 ;;
		--compaction-p99-settings) compaction_p99_settings=$2; shift 2 ;;
		--out) out=$2; shift 2 ;;
		--port) port=$2; shift 2 ;;
		--build) build=1; shift ;;
		--keep) keep=1; shift ;;
		--docs) docs=1; shift ;;
		-h|--help) sed -n '2,62p' "$0"; exit 0 ;;
		*) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ "$quick" = 1 ]; then
	# options given explicitly still win (also one equal to the default)
	case " $given " in *" rows "*) ;; *) rows=1800000 ;; esac
	case " $given " in *" duration "*) ;; *) duration=8 ;; esac
	case " $given " in *" copy_rows "*) ;; *) copy_rows=100000 ;; esac
	oltp_duration=5
	oltp_rows=200000
	oltp_secs=6
	p99_secs=8
	[ "$p99_settings_set" = 0 ] && p99_settings=""
	[ -z "$steps" ] && steps="1100000 $rows"
fi
[ -z "$oltp_duration" ] && oltp_duration=$duration
if [ -z "$steps" ]; then
	steps=$(awk -v n="$rows" 'BEGIN { split("0.1 0.2 0.4 0.6 0.8 1", f, " ");
		for (i = 1; i <= 6; i++) printf "%d ", int(n * f[i] + 0.5) }')
fi
# sizes as bytes for the cgroup
to_bytes() { numfmt --from=iec "$(echo "$1" | tr -d 'B' | tr 'kmgt' 'KMGT')"; }
mem_bytes=$(to_bytes "$mem")

if [ "$(id -u)" -ne 0 ]; then
	echo "bench.sh: run as root (it installs packages and sets up a memory cgroup)" >&2
	exit 1
fi

# --------------------------------------------------------------------------
# set-up: packages, the extension, matplotlib, the output directory
# --------------------------------------------------------------------------
bash "$top/test/setup.sh"
PY=/usr/bin/python3
if ! $PY -c 'import matplotlib' 2>/dev/null; then
	echo "== installing python3-matplotlib"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-matplotlib </dev/null \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-matplotlib </dev/null; }
fi
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
bindir=$($PG_CONFIG --bindir)

if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/archive_cluster_bench.XXXX)
else
	mkdir -p "$out"
fi
out=$(cd "$out" && pwd)
res="$out/results"
raw="$out/raw"
mkdir -p "$res" "$raw" "$out/lib"
cp "$here"/lib/*.sql "$here"/lib/*.pgbench "$out/lib/"
chown -R postgres: "$out"
chmod 755 "$out"
exec > >(tee -a "$out/bench.log") 2>&1

if [ "$build" = 1 ] || [ ! -f "$($PG_CONFIG --sharedir)/extension/archive_cluster.control" ]; then
	echo "== build and install archive_cluster from a copy of $top"
	mkdir -p "$out/build"
	tar -C "$top" --exclude=.git --exclude='./.pg*' --exclude='*.o' --exclude='*.so' -cf - \
		Makefile archive_cluster.control archive_cluster--*.sql src | tar -C "$out/build" -xf -
	make -C "$out/build" -s PG_CONFIG="$PG_CONFIG" >/dev/null
	make -C "$out/build" -s PG_CONFIG="$PG_CONFIG" install >/dev/null
fi
so="$($PG_CONFIG --pkglibdir)/archive_cluster.so"

started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
cmdline="bench/bench.sh${args:+ $args}"
{
	echo "date,$started_at"
	echo "command,$cmdline"
	echo "rows,$rows"
	echo "steps,$(echo $steps)"
	echo "duration_s,$duration"
	echo "mem,$mem"
	echo "shared_buffers,$shared_buffers"
	echo "hot_window,$hot_window"
	echo "copy_rows,$copy_rows"
	echo "cpu,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//;s/,/ /g')"
	echo "cores,$(nproc)"
	echo "ram,$(free -g | awk '/Mem:/ {print $2 " GiB"}')"
	echo "postgres,$("$bindir/postgres" --version)"
	echo "kernel,$(uname -r)"
	echo "extension_so,$so $(stat -c '%y' "$so" | cut -d. -f1) md5 $(md5sum "$so" | cut -c1-12)"
	echo "git,$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo none)$(git -C "$top" diff --quiet 2>/dev/null || echo ' (dirty tree)')"
} > "$res/meta.csv"
echo "== archive_cluster benchmark: $cmdline"
echo "   out: $out   rows: $rows   steps: $(echo $steps)   pgbench: ${duration}s   memory cgroup: $mem"

as_pg() { runuser -u postgres -- "$@"; }

# --------------------------------------------------------------------------
# servers: one at a time, each in its own memory cgroup
# --------------------------------------------------------------------------
pgdata=""
cgroup=""
sock="$out"
stop_server() {
	if [ -n "$pgdata" ] && [ -f "$pgdata/postmaster.pid" ]; then
		local pid
		pid=$(head -1 "$pgdata/postmaster.pid")
		echo "   stopping the server (pid $pid)"
		as_pg "$bindir/pg_ctl" -D "$pgdata" -m fast -w -t 120 stop >/dev/null || kill "$pid" || true
	fi
	if [ -n "$cgroup" ] && [ -d "$cgroup" ]; then
		# the page cache charged to the group goes back to the parent
		echo 0 > "$cgroup/memory.force_empty" 2>/dev/null || true
		rmdir "$cgroup" 2>/dev/null || true
	fi
	if [ -n "$pgdata" ] && [ "$keep" = 0 ]; then
		rm -rf "$pgdata"
	fi
	pgdata=""
	cgroup=""
}
cleanup() {
	stop_server
	if [ "$keep" = 0 ]; then
		rm -rf "$raw" "$out/build" "$out/copy.csv"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_server() {	# start_server NAME
	pgdata="$out/data_$1"
	rm -rf "$pgdata"
	as_pg "$bindir/initdb" -D "$pgdata" -A trust -U postgres >/dev/null
	cat >> "$pgdata/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$sock'
port = $port
max_connections = 40
shared_buffers = $shared_buffers
maintenance_work_mem = 128MB
checkpoint_timeout = 15min
max_wal_size = 4GB
lc_messages = 'C'
log_autovacuum_min_duration = 10s
log_checkpoints = on
# loaded as on a production server (the worker needs it), so table mode's
# cross-tier check has its shared counters and skips keys beyond the
# archive's range; the bench runs each archiving step itself
shared_preload_libraries = 'archive_cluster'
archive_cluster.enabled = off
EOF
	cgroup="/sys/fs/cgroup/memory/archive_cluster_bench.$$"
	mkdir -p "$cgroup"
	echo "$mem_bytes" > "$cgroup/memory.limit_in_bytes"
	sync
	echo 3 > /proc/sys/vm/drop_caches
	# the postmaster and every backend live in the group (page cache too)
	bash -c "echo \$\$ > '$cgroup/cgroup.procs'; exec runuser -u postgres -- '$bindir/pg_ctl' -D '$pgdata' -l '$out/server_$1.log' -w start" >/dev/null
	echo "   server $1: pid $(head -1 "$pgdata/postmaster.pid"), port $port, memory cgroup $mem ($cgroup)"
}

psql_db() {	# psql_db DB [psql args]
	local db=$1; shift
	as_pg "$bindir/psql" -h "$sock" -p "$port" -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"
}
q() { psql_db bench -At "$@"; }

cg_peak() { [ -n "$cgroup" ] && numfmt --to=iec "$(cat "$cgroup/memory.max_usage_in_bytes")" || echo "?"; }

# before each measurement: write out what the growth left dirty, so that every
# layout's pgbench run starts from the same clean state
settle() { q -c "CHECKPOINT" >/dev/null; sync; }

# pgbench, logging each transaction; prints the tps
run_pgbench() {	# run_pgbench LOGPREFIX SECONDS CLIENTS [pgbench args: -f ...]
	local prefix=$1 secs=$2 clients=$3; shift 3
	(cd "$raw" && as_pg "$bindir/pgbench" -h "$sock" -p "$port" -n -M prepared --max-tries=10 -c "$clients" -j 2 \
		-T "$secs" --log --log-prefix="$prefix" "$@" bench) > "$raw/$prefix.out" 2>&1 || {
		cat "$raw/$prefix.out"; return 1; }
	sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$raw/$prefix.out" | head -1
}
mixed_scripts=(-f "$out/lib/insert.pgbench@25" -f "$out/lib/update.pgbench@25"
	-f "$out/lib/select_one.pgbench@25" -f "$out/lib/select_hour.pgbench@15"
	-f "$out/lib/select_all.pgbench@10")
mixed_names="insert,update,select_one,select_hour,select_all"
oltp_scripts=(-f "$out/lib/insert.pgbench@1" -f "$out/lib/update.pgbench@1" -f "$out/lib/select_one.pgbench@1")
oltp_names="insert,update,select_one"

# the customers whose "select all" buffers are counted, the same in every layout
sample_cids="SELECT (i * 997) % 10000 FROM generate_series(1, 25) i"
select_all_buffers() {	# select_all_buffers RELATION -> "avg_buffers,avg_rows"
	q -c "SELECT round(avg(b.buffers), 1) || ',' || round(avg(b.nrows), 1)
		FROM ($sample_cids) s(c), bench_buffers('$1', c) b"
}

# where "select all" reads, per table of its plan (the scan's buffers, the
# heap pages holding the rows), averaged over the same customers: a row of
# split.csv per table, at a POINT of the cycle (cycle_buffers)
select_all_split() {	# select_all_split RELATION LAYOUT STEP POINT
	q -F , -c "SELECT '$2', '$3', '$4', b.relname, round(avg(b.buffers), 1), round(avg(b.heap_pages), 1)
		FROM ($sample_cids) s(c), bench_buffers_split('$1', c) b GROUP BY b.relname ORDER BY 4" >> "$res/split.csv"
}

csv_init() {	# csv_init FILE HEADER: a results directory used before starts afresh
	echo "$2" > "$res/$1"
}
csv_init steps.csv "layout,step_rows,table_rows,grow_seconds,tps,select_all_buffers,select_all_rows,db_bytes,current_rows,archive_rows,mem_peak"
csv_init latency.csv "layout,workload,step_rows,type,count,avg_ms,p99_ms,retried,failed"
csv_init runs.csv "layout,run_no,table_rows,rows_moved,seconds,how"
csv_init cycle.csv "layout,step_rows,table_rows,before_run,after_run,after_compaction,repacked,archive_rows,batch_rows,archive_pages_peak,archive_pages,archive_repacked_pages"
csv_init compactions.csv "layout,compaction_no,table_rows,rows_rewritten,bytes_rewritten,seconds"
csv_init split.csv "layout,step_rows,point,relation,buffers,heap_pages"
csv_init focused.csv "benchmark,layout,table_rows,metric,value,unit"
rm -f "$res/p99_settings.csv" "$res/compaction_p99_settings.csv"

focused() {	# focused BENCHMARK LAYOUT ROWS METRIC VALUE UNIT
	echo "$1,$2,$3,$4,$5,$6" >> "$res/focused.csv"
	echo "   [$1] $2 @ $3 rows: $4 = $5 $6"
}

ids() { q -c "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM t_id_seq"; }

# the layouts archived by archive_cluster: ext (view mode), tab (table mode)
is_ac() { [ "$1" = ext ] || [ "$1" = tab ]; }
# the current tier of a two-table layout: to read it (cur_rows) and to
# vacuum or analyze it (cur_rel).  In table mode it is t's own rows (ONLY t;
# VACUUM t does not recurse into its inheritance child t_archive).
cur_rows() { if [ "$1" = tab ]; then echo "ONLY t"; else echo t_current; fi; }
cur_rel() { if [ "$1" = tab ]; then echo t; else echo t_current; fi; }

# grow t to TARGET ids in chunks of 100,000 rows (see bench_grow in
# lib/common.sql); more arguments: psql -c options run first in each session
# (SET ...).  Two sessions grow each chunk side by side (one per core), each
# inserting and updating in its own batches until the ids reach the chunk's
# end, each updating its own half of the recent ids (odd or even), so they
# never wait for each other's rows; bench_maybe_run() takes turns on the row
# of bench_state.
grow_to() {	# grow_to TARGET [-c "SET ..."]...
	local target=$1 cur next p1 p2; shift
	cur=$(ids)
	while [ "$cur" -lt "$target" ]; do
		next=$((cur + 100000))
		[ "$next" -gt "$target" ] && next=$target
		q "$@" -c "CALL bench_grow($next, part => 0, parts => 2)" >/dev/null & p1=$!
		q "$@" -c "CALL bench_grow($next, part => 1, parts => 2)" >/dev/null & p2=$!
		wait "$p1"
		wait "$p2"
		cur=$(ids)
		vacuum_after_compaction
	done
}

# After a compaction of the growth (bench_maybe_run), VACUUM the archive, as
# the worker does after each: the next compaction writes onto the pages it
# emptied.  (Runs do not vacuum t_current here: see docs/benchmarks.md.)
compactions_seen=0
vacuum_after_compaction() {
	local n
	n=$(q -c "SELECT count(*) FROM pg_class WHERE relname = 'bench_compactions'")
	[ "$n" = 1 ] || return 0
	n=$(q -c "SELECT count(*) FROM bench_compactions")
	if [ "$n" != "$compactions_seen" ]; then
		q -c "VACUUM t_archive" >/dev/null
		compactions_seen=$n
	fi
}

# --------------------------------------------------------------------------
# COPY FROM: into the plain table, through archive_cluster's view, into
# archive_cluster's table in table mode, through the PL/pgSQL view (target
# 6); one server, 4 rounds, each target in turn, the order rotated by one
# each round (each target takes each place once), median of the wall times;
# the COPY backend's CPU time (user + system, /proc/self/stat) beside it
# --------------------------------------------------------------------------
# the median of numbers, one per line
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

copy_bench() {
	echo "== COPY FROM: $copy_rows rows, plain table vs archive_cluster's view vs its table mode vs the PL/pgSQL view"
	psql_db postgres -c "CREATE DATABASE copybench"
	psql_db copybench <<SQL
CREATE EXTENSION archive_cluster;
CREATE TABLE c_plain (ts timestamp NOT NULL, id int NOT NULL PRIMARY KEY, cid int NOT NULL, pad varchar(200) NOT NULL);
CREATE INDEX ON c_plain (cid, ts);
CREATE TABLE c_ext (LIKE c_plain INCLUDING ALL);
SELECT archive_cluster_register('c_ext', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour');
CREATE TABLE c_tab (LIKE c_plain INCLUDING ALL);
SELECT archive_cluster_register('c_tab', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour',
								mode => 'table');
CREATE TABLE c_sql_current (LIKE c_plain INCLUDING ALL);
CREATE TABLE c_sql_archive (LIKE c_plain INCLUDING ALL);
CREATE VIEW c_sql AS SELECT * FROM c_sql_current UNION ALL SELECT * FROM c_sql_archive;
CREATE FUNCTION c_sql_ins() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO c_sql_current VALUES (NEW.*); RETURN NEW; END \$\$;
CREATE TRIGGER c_sql_ins INSTEAD OF INSERT ON c_sql FOR EACH ROW EXECUTE FUNCTION c_sql_ins();
SELECT setseed(0.5);
COPY (SELECT clock_timestamp()::timestamp, i, floor(random() * 10000)::int, repeat('*', floor(random() * 201)::int)
	  FROM generate_series(1, $copy_rows) i) TO '$out/copy.csv' (FORMAT csv);
SQL
	local round target t k
	local targets=(c_plain c_ext c_tab c_sql)
	for round in 1 2 3 4; do
		for k in 0 1 2 3; do
			target=${targets[$(( (k + round - 1) % 4 ))]}
			# (TRUNCATE c_tab empties its inheritance child c_tab_archive too)
			local trunc="TRUNCATE $target"
			[ "$target" = c_ext ] && trunc="TRUNCATE c_ext_current, c_ext_archive"
			[ "$target" = c_sql ] && trunc="TRUNCATE c_sql_current, c_sql_archive"
			psql_db copybench -c "$trunc" -c "CHECKPOINT"
			t=$(psql_db copybench -At <<SQL
CREATE TEMP VIEW cpu AS SELECT (split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint) / $(getconf CLK_TCK).0 AS s
	FROM pg_read_file('/proc/self/stat') s;
SELECT s AS c0, clock_timestamp() AS t0 FROM cpu \gset
COPY $target FROM '$out/copy.csv' (FORMAT csv);
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3) || ',' || round(s - :c0, 2) FROM cpu;
SQL
)
			echo "copy,$target,$round,$t" >> "$raw/copy_times.csv"
			echo "   round $round: COPY $copy_rows rows into $target: ${t%,*} s (backend CPU ${t#*,} s)"
			# vacuumed and analyzed now, not by autovacuum during the next
			# target's COPY (as for OLTP's rounds)
			local tables=$target
			[ "$target" = c_ext ] && tables="c_ext_current, c_ext_archive"
			[ "$target" = c_sql ] && tables="c_sql_current, c_sql_archive"
			psql_db copybench -c "VACUUM (ANALYZE) $tables" >/dev/null
		done
	done
	for target in c_plain c_ext c_tab c_sql; do
		local med cpu
		med=$(awk -F, -v t="$target" '$2 == t { print $4 }' "$raw/copy_times.csv" | median)
		cpu=$(awk -F, -v t="$target" '$2 == t { print $5 }' "$raw/copy_times.csv" | median)
		local layout=plain
		[ "$target" = c_ext ] && layout=ext
		[ "$target" = c_tab ] && layout=tab
		[ "$target" = c_sql ] && layout=sql
		focused copy "$layout" "$copy_rows" seconds_median "$med" s
		focused copy "$layout" "$copy_rows" rows_per_s "$(awk -v n="$copy_rows" -v s="$med" 'BEGIN { printf "%.0f", n / s }')" rows/s
		focused copy "$layout" "$copy_rows" cpu_seconds_median "$cpu" s
	done
	psql_db postgres -c "DROP DATABASE copybench"
	rm -f "$out/copy.csv"
}

# --------------------------------------------------------------------------
# OLTP only (target 3): the plain table, archive_cluster's view and
# archive_cluster's table in table mode side by side in one server, three
# databases grown alike to $oltp_rows rows (the registered ones with their
# runs), then 5 rounds of pgbench, each database in turn, median tps.
# Alternating in one server cancels the drift of a shared machine that
# separate servers, minutes apart, would carry into the ratios.  Each round
# starts settled: the previous round's database vacuumed (else autovacuum
# cleans up after it during the next round: the database that always
# follows view mode's lost ~10% to it) and a checkpoint.
# --------------------------------------------------------------------------
oltp_grow() {	# oltp_grow DB
	local n=0
	while [ "$n" -lt "$oltp_rows" ]; do
		n=$((n + 50000)); [ "$n" -gt "$oltp_rows" ] && n=$oltp_rows
		psql_db "$1" -c "CALL bench_grow($n)" >/dev/null
	done
	psql_db "$1" -c "VACUUM ANALYZE" >/dev/null
}
oltp_bench() {
	local db layout round tps p1 p2 p3
	echo "== OLTP only: plain table vs archive_cluster's view vs its table mode, $oltp_rows rows each, 5 rounds of ${oltp_secs} s"
	for layout in plain ext tab; do
		db=oltp_$layout
		psql_db postgres -c "CREATE DATABASE $db" \
			-c "ALTER DATABASE $db SET bench.hot_window = '$hot_window'" \
			-c "ALTER DATABASE $db SET bench.run_every = '$run_every'" \
			-c "ALTER DATABASE $db SET bench.check_every = '$check_every'" >/dev/null
		psql_db "$db" -f "$out/lib/layout_$layout.sql" -f "$out/lib/common.sql" >/dev/null
	done
	# the three databases grow side by side, one session each
	oltp_grow oltp_plain & p1=$!
	oltp_grow oltp_ext & p2=$!
	oltp_grow oltp_tab & p3=$!
	wait "$p1"
	wait "$p2"
	wait "$p3"
	local layouts3=(plain ext tab) k
	for round in 1 2 3 4 5; do
		for k in 0 1 2; do
			# each layout takes each place in turn
			layout=${layouts3[$(( (k + round - 1) % 3 ))]}
			db=oltp_$layout
			psql_db "$db" -c "CHECKPOINT" >/dev/null
			(cd "$raw" && as_pg "$bindir/pgbench" -h "$sock" -p "$port" -n -M prepared --max-tries=10 -c 10 -j 2 \
				-T "$oltp_secs" "${oltp_scripts[@]}" "$db") > "$raw/oltp_alt_$layout.$round.out" 2>&1
			tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$raw/oltp_alt_$layout.$round.out" | head -1)
			echo "oltp,$layout,$round,$tps" >> "$raw/oltp_times.csv"
			echo "   round $round: $layout: $tps tps"
			# the round's dead rows vacuumed now, not by autovacuum during
			# the next layout's round
			psql_db "$db" -c "VACUUM" >/dev/null
		done
	done
	for layout in plain ext tab; do
		focused oltp_same_server "$layout" "$oltp_rows" tps_median \
			"$(awk -F, -v l="$layout" '$2 == l { print $4 }' "$raw/oltp_times.csv" | median)" tps
	done
	psql_db postgres -c "DROP DATABASE oltp_plain" -c "DROP DATABASE oltp_ext" -c "DROP DATABASE oltp_tab" >/dev/null
}

# --------------------------------------------------------------------------
# Focused: a run of ~550k rows by archive_cluster vs the single SQL
# statement, on the same rows (target 4): grow a tail without archiving,
# then the statement (rolled back), VACUUM, then archive_cluster_run
# (committed).  Statement times only, from inside the transaction.  In
# table mode the statement is the same on t's own rows (DELETE FROM ONLY t
# ... INSERT INTO t_archive), run twice: with the session's
# session_replication_role = replica, so that t_archive's row triggers (the
# cross-tier unique check, archive_cluster_unique) do not fire: the seed's
# statement, the same work as in view mode, the verdict; then as any session
# would run it, the triggers firing (sql_statement_triggers_tab).  Layout
# ext's figures keep their names (sql_statement, archive_cluster_run,
# LABEL); layout tab's get the suffix _tab.
# --------------------------------------------------------------------------
sql_move() {	# sql_move LAYOUT [SQL run first]: the SQL statement, rolled back -> "seconds wal_bytes"
	local cur
	cur=$(cur_rows "$1")
	psql_db bench -At <<SQL
SET work_mem = '128MB';
${2:-}
BEGIN;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS w0 \gset
WITH m AS (DELETE FROM $cur WHERE ts < now() - interval '$hot_window' RETURNING *)
INSERT INTO t_archive SELECT * FROM m ORDER BY cid, ts;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3) || ' ' || pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'w0');
ROLLBACK;
SQL
	q -c "VACUUM t_archive, $(cur_rel "$1")" -c "CHECKPOINT"
	q -c "SELECT count(*) FROM $cur" >/dev/null
}

grow_tail() {	# grow_tail LAYOUT: add rows without archiving until ~a run's worth are eligible
	local thr cur need
	if is_ac "$1"; then
		thr=$(q -c "SELECT threshold_rows FROM archive_cluster_tables WHERE relation = 't'::regclass")
	else
		thr=$run_every
	fi
	cur=$(q -c "SELECT count(*) FROM $(cur_rows "$1") WHERE ts < now() - interval '$hot_window'")
	need=$(( thr - cur + 20000 ))
	if [ "$need" -gt 0 ]; then
		grow_to $(( $(ids) + need )) -c "SET bench.check_every = 1000000000" -c "SET bench.run_every = 1000000000"
	fi
	sleep 1.5	# past the hot window
	echo "$thr"
}

run_vs_sql() {	# run_vs_sql LAYOUT LABEL
	local layout=$1 label=$2 eligible rows_now t_sql t_ext n_sql n_ext sfx="" cur
	[ "$layout" = tab ] && sfx=_tab
	cur=$(cur_rows "$layout")
	rows_now=$(ids)
	eligible=$(q -c "SELECT count(*) FROM $cur WHERE ts < now() - interval '$hot_window'")
	echo "   tail: $eligible eligible rows, table $rows_now rows"
	q -c "SELECT count(*) FROM $cur" >/dev/null	# same cache state for both
	n_sql=$eligible
	local w_sql w_ext t_trg="" w_trg="" o
	if [ "$layout" = tab ]; then
		o=$(sql_move tab "SET session_replication_role = replica;")
		read -r t_sql w_sql <<< "$o"
		o=$(sql_move tab)
		read -r t_trg w_trg <<< "$o"
	else
		o=$(sql_move "$layout")
		read -r t_sql w_sql <<< "$o"
	fi
	# paced: the part of the run spent sleeping for archive_cluster.run_max_wal_rate
	# (nothing else should be writing here, so normally 0)
	local p_ext
	read -r n_ext t_ext w_ext p_ext < <(psql_db bench -At -F ' ' <<SQL
BEGIN;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS w0 \gset
SELECT rows_moved FROM archive_cluster_run('t', force => true) \gset
SELECT :rows_moved, round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3), pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'w0'),
	(SELECT round(extract(epoch FROM paced)::numeric, 3) FROM archive_cluster_runs ORDER BY run_id DESC LIMIT 1);
COMMIT;
SQL
)
	focused run_vs_sql "sql_statement$sfx" "$rows_now" rows "$n_sql" rows
	focused run_vs_sql "sql_statement$sfx" "$rows_now" seconds "$t_sql" s
	focused run_vs_sql "archive_cluster_run$sfx" "$rows_now" rows "$n_ext" rows
	focused run_vs_sql "archive_cluster_run$sfx" "$rows_now" seconds "$t_ext" s
	focused run_vs_sql "archive_cluster_run$sfx" "$rows_now" paced_seconds "$p_ext" s
	focused run_vs_sql "sql_statement$sfx" "$rows_now" wal_mb "$(awk -v w="$w_sql" 'BEGIN { printf "%.0f", w / 1048576 }')" MB
	if [ -n "$t_trg" ]; then
		focused run_vs_sql "sql_statement_triggers$sfx" "$rows_now" seconds "$t_trg" s
		focused run_vs_sql "sql_statement_triggers$sfx" "$rows_now" wal_mb "$(awk -v w="$w_trg" 'BEGIN { printf "%.0f", w / 1048576 }')" MB
	fi
	focused run_vs_sql "archive_cluster_run$sfx" "$rows_now" wal_mb "$(awk -v w="$w_ext" 'BEGIN { printf "%.0f", w / 1048576 }')" MB
	focused run_vs_sql "$label$sfx" "$rows_now" speedup "$(awk -v a="$t_sql" -v b="$t_ext" 'BEGIN { printf "%.2f", a / b }')" x
}

# --------------------------------------------------------------------------
# Focused: p99 of concurrent inserts without and with a run (target 5):
# $p99_clients clients inserting at $p99_rate tps in all; first without a
# run, then with a run started 3 s in; the inserts that ran during the run
# against those of the run without.
# --------------------------------------------------------------------------
p99_during_run() {	# p99_during_run LAYOUT [LABEL SETTINGS [compaction [SCALE]]]: ext or tab, the run's session with SETTINGS (a=b,c=d)
	local layout=$1 label=${2:-$1} secs=$p99_secs runcall t0 t1 scale=${5:-1}
	grow_tail "$layout" >/dev/null
	local kv
	if [ "${4:-}" = compaction ]; then
		# the loose pages of the last runs: a forced compaction of them; a
		# variant (SETTINGS given) first archives the tail, so that each
		# variant has the newest batch's loose pages to compact
		[ -n "${3:-}" ] && q -c "SELECT rows_moved FROM archive_cluster_run('t', force => true)" >/dev/null
		runcall="SELECT rows_rewritten FROM archive_cluster_compact('t', force => true)"
	elif is_ac "$layout"; then
		runcall="SELECT rows_moved FROM archive_cluster_run('t', force => true)"
	else
		runcall="SELECT sql_archive_run(interval '$hot_window')"
	fi
	for kv in $(echo "${3:-}" | tr ',' ' '); do
		runcall="SET ${kv%%=*} = '${kv#*=}'; $runcall"
	done
	echo "   inserts without a run: ${secs} s at $p99_rate tps"
	# the previous run's deleted and appended rows: vacuumed (and the new
	# tail analyzed) now rather than by autovacuum in the middle of a
	# measurement
	q -c "VACUUM ANALYZE $(cur_rel "$layout"), t_archive" >/dev/null
	settle
	run_pgbench "p99_base_$label" "$secs" "$p99_clients" -R "$p99_rate" -f "$out/lib/insert.pgbench" >/dev/null
	echo "   inserts with a run"
	# pgbench runs for as long as the last archive run of the growth took,
	# 3 times over, plus 3 s before and after: it writes its log only when it
	# ends by itself, so it is never interrupted
	local last secs_run
	if [ "${4:-}" = compaction ]; then
		last=$(q -c "SELECT coalesce(max(seconds) FILTER (WHERE compaction_no = (SELECT max(compaction_no) FROM bench_compactions)), 5) FROM bench_compactions")
	else
		last=$(q -c "SELECT coalesce(max(seconds) FILTER (WHERE run_no = (SELECT max(run_no) FROM bench_runs)), 5) FROM bench_runs")
	fi
	secs_run=$(awk -v l="$last" -v m="$p99_secs" -v k="$scale" 'BEGIN { s = int(3 * l * k + 7); if (s < m) s = m; print s }')
	settle
	(cd "$raw" && as_pg "$bindir/pgbench" -h "$sock" -p "$port" -n -M prepared --max-tries=10 -c "$p99_clients" -j 2 \
		-T "$secs_run" -R "$p99_rate" --log --log-prefix="p99_run_$label" -f "$out/lib/insert.pgbench" bench \
		> "$raw/p99_run_$label.out" 2>&1) &
	local pgb=$!
	sleep 3
	# what the inserting sessions wait for, sampled every 50 ms while the run
	# lasts, from one session (bench_sample_waits in lib/common.sql)
	q -c "TRUNCATE bench_waits" >/dev/null
	q -c "CALL bench_sample_waits($secs_run)" >/dev/null &
	local sampler=$!
	t0=$(date +%s.%N)
	local moved
	moved=$(q -c "$runcall")
	t1=$(date +%s.%N)
	wait "$sampler"
	wait "$pgb"
	{ echo "wait_event,samples"; q -F , -c "SELECT wait, count(*) FROM bench_waits GROUP BY 1 ORDER BY 2 DESC"; } \
		> "$res/p99_waits_$label.csv"
	echo "   inserting sessions during the run (wait events, 50-ms samples): $(tail -n +2 "$res/p99_waits_$label.csv" | head -5 | tr '\n' ' ')"
	$PY "$here/lib/report.py" p99window "$raw" "$label" "$t0" "$t1" "$moved" "$(ids)" >> "$res/focused.csv"
	tail -4 "$res/focused.csv" | sed 's/^/   /'
}

# --------------------------------------------------------------------------
# Target 2 over a cycle: "select all" buffers with a full tail (just before a
# run), right after the run (t_current vacuumed, as the worker does), right
# after the compaction that follows it (if due; the archive vacuumed), and the
# same rows freshly rewritten in (cid, ts) order.  One row of cycle.csv.
# --------------------------------------------------------------------------
repacked_buffers() {	# repacked_buffers LAYOUT STEP -> avg buffers of "select all" on t rewritten in (cid, ts) order
	local rb
	q -c "CREATE TABLE t_repacked AS SELECT * FROM t ORDER BY cid, ts" -c "CREATE INDEX ON t_repacked (cid, ts)" \
		-c "VACUUM ANALYZE t_repacked" >/dev/null
	rb=$(select_all_buffers t_repacked)
	select_all_split t_repacked "$1" "$2" repacked
	q -c "DROP TABLE t_repacked" >/dev/null
	echo "${rb%,*}"
}

compact_now() {	# compact_now: as the worker would after a run; echoes the status
	local st
	st=$(q -c "SELECT status FROM archive_cluster_compact('t')")
	# the archive's size at its largest: the compaction's rows written, the
	# rows it deleted not yet vacuumed
	q -c "SELECT pg_relation_size('t_archive') / 8192" > "$out/archive_peak_pages"
	[ "$st" = compacted ] && q -c "VACUUM t_archive" >/dev/null
	echo "$st"
}

# The archive's disk after a run and its compaction (one cycle.csv row's
# last five columns): its rows, the last run's rows (one batch), its pages
# at the largest (before the VACUUM after the compaction) and after the
# VACUUM, and the pages of its rows rewritten in (cid, ts) order.
archive_disk() {
	local peak
	peak=$(cat "$out/archive_peak_pages" 2>/dev/null || true)
	[ -n "$peak" ] || peak=$(q -c "SELECT pg_relation_size('t_archive') / 8192")
	rm -f "$out/archive_peak_pages"
	q -c "CREATE TABLE t_archive_repacked AS SELECT * FROM t_archive ORDER BY cid, ts" >/dev/null
	echo "$(q -c "SELECT count(*) FROM t_archive"),$(q -c "SELECT rows_moved FROM archive_cluster_runs WHERE relation = 't'::regclass AND kind = 'archive' AND error IS NULL AND rows_moved > 0 ORDER BY started_at DESC LIMIT 1"),$peak,$(q -c "SELECT pg_relation_size('t_archive') / 8192"),$(q -c "SELECT pg_relation_size('t_archive_repacked') / 8192")"
	q -c "DROP TABLE t_archive_repacked" >/dev/null
}

cycle_buffers() {	# cycle_buffers LAYOUT STEP
	local layout=$1 step=$2 bb ba bc rb st disk
	grow_tail "$layout" >/dev/null
	q -c "ANALYZE" >/dev/null
	bb=$(select_all_buffers t)
	select_all_split t "$layout" "$step" before_run
	q -c "SELECT status FROM archive_cluster_run('t', force => true)" >/dev/null
	q -c "VACUUM ANALYZE $(cur_rel "$layout")" >/dev/null
	ba=$(select_all_buffers t)
	bc=$ba
	st=off
	if [ "$compaction" != off ]; then
		st=$(compact_now)
		bc=$(select_all_buffers t)
	fi
	select_all_split t "$layout" "$step" after_compaction
	rb=$(repacked_buffers "$layout" "$step")
	disk=$(archive_disk)
	echo "$layout,$step,$(ids),${bb%,*},${ba%,*},${bc%,*},$rb,$disk" >> "$res/cycle.csv"
	echo "   before the run ${bb%,*}, after it ${ba%,*}, after the compaction ($st) ${bc%,*}; repacked $rb"
	echo "   archive (rows, last batch, pages at the largest, after VACUUM, repacked): $disk"
}

# --------------------------------------------------------------------------
# one layout: grow in steps, measure at each step, focused runs at the end
# --------------------------------------------------------------------------
run_layout() {	# run_layout LAYOUT
	local layout=$1
	echo
	echo "== layout $layout"
	start_server "$layout"
	psql_db postgres -c "CREATE DATABASE bench"
	psql_db postgres -c "ALTER DATABASE bench SET bench.hot_window = '$hot_window'" \
		-c "ALTER DATABASE bench SET bench.run_every = '$run_every'" \
		-c "ALTER DATABASE bench SET bench.check_every = '$check_every'" \
		-c "ALTER DATABASE bench SET bench.batch_rows = '$batch_rows'" \
		-c "ALTER DATABASE bench SET bench.compaction = '$compaction'"
	if [ -n "$compaction_threshold" ] && is_ac "$layout"; then
		psql_db postgres -c "ALTER DATABASE bench SET archive_cluster.compaction_threshold = '$compaction_threshold'"
	fi
	compactions_seen=0
	psql_db bench -f "$out/lib/layout_$layout.sql" >/dev/null
	psql_db bench -f "$out/lib/common.sql" >/dev/null

	# targets 3 and 6 (one server, all sides alternating): once, in the
	# server of the first archive_cluster layout
	if is_ac "$layout" && [ -z "${copy_done:-}" ]; then
		copy_bench
		oltp_bench
		copy_done=1
	fi

	local step first=1 t0 grow_s tps bufs dbb cur arc nrows
	local final
	final=$(echo $steps | awk '{ print $NF }')
	for step in $steps; do
		echo "-- $layout: growing to $step rows"
		t0=$(date +%s.%N)
		grow_to "$step"
		grow_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		q -c "ANALYZE" >/dev/null
		nrows=$(ids)
		echo "-- $layout @ $nrows rows: mixed workload, ${duration} s, 10 clients"
		settle
		tps=$(run_pgbench "mixed_${layout}_$step" "$duration" 10 "${mixed_scripts[@]}")
		$PY "$here/lib/report.py" lat "$raw/mixed_${layout}_$step" "$layout" mixed "$step" "$mixed_names" >> "$res/latency.csv"
		bufs=$(select_all_buffers t)
		dbb=$(q -c "SELECT pg_database_size(current_database())")
		if [ "$layout" = plain ]; then
			cur=$(q -c "SELECT reltuples::bigint FROM pg_class WHERE oid = 't'::regclass"); arc=0
		else
			cur=$(q -c "SELECT count(*) FROM $(cur_rows "$layout")"); arc=$(q -c "SELECT reltuples::bigint FROM pg_class WHERE oid = 't_archive'::regclass")
		fi
		echo "$layout,$step,$nrows,$grow_s,$tps,$bufs,$dbb,$cur,$arc,$(cg_peak)" >> "$res/steps.csv"
		echo "   grown in $grow_s s; tps $tps; select all: buffers,rows $bufs; db $(numfmt --to=iec "$dbb"); current $cur, archive ~$arc; cgroup peak $(cg_peak)"
		grep "^$layout,mixed,$step," "$res/latency.csv" | awk -F, '{ printf "   %-12s n=%-7s avg %8.2f ms  p99 %8.2f ms  retried %s failed %s\n", $4, $5, $6, $7, $8, $9 }'
		if is_ac "$layout" && [ "$first" = 1 ]; then
			# target 4 at the first step (~1.1M rows), after its measurement
			echo "-- $layout: a run of ~550k rows vs the SQL statement (at ~$step rows)"
			grow_tail "$layout" >/dev/null
			run_vs_sql "$layout" at_first_step
		fi
		first=0
		# target 2 at every step but the last (measured with target 4 below)
		if is_ac "$layout" && [ "$step" != "$final" ]; then
			echo "-- $layout: \"select all\" buffers over a cycle (at ~$step rows)"
			cycle_buffers "$layout" "$step"
		fi
	done

	local n
	n=$(ids)
	echo "-- $layout @ $n rows: focused benchmarks"
	# OLTP only on this layout's full-size table (target 3 itself is judged
	# by oltp_bench, side by side); first: right after a run that empties
	# t_current, sessions would prepare their statements on an empty table
	echo "   OLTP only (insert, update, select one: 1:1:1), ${oltp_duration} s, 10 clients"
	settle
	tps=$(run_pgbench "oltp_$layout" "$oltp_duration" 10 "${oltp_scripts[@]}")
	$PY "$here/lib/report.py" lat "$raw/oltp_$layout" "$layout" oltp "$(ids)" "$oltp_names" >> "$res/latency.csv"
	focused oltp "$layout" "$(ids)" tps "$tps" tps

	# target 2: "select all" buffers against the same rows freshly rewritten in
	# (cid, ts) order, as pg_repack -o cid,ts would (CREATE TABLE AS ... ORDER
	# BY cid, ts gives the same layout).  The two designs are measured at both
	# ends of their cycle: with a full tail (~550k rows in t_current, just
	# before a run) and right after the run (same rows).
	local rb bb=""
	if [ "$layout" != plain ]; then
		echo "-- $layout: grow a full tail, \"select all\" buffers before and after a run"
		grow_tail "$layout" >/dev/null
		q -c "ANALYZE" >/dev/null
		bb=$(select_all_buffers t)
		if is_ac "$layout"; then
			echo "-- $layout: a run of ~550k rows vs the SQL statement (at ~$(ids) rows)"
			run_vs_sql "$layout" at_final_step
		else
			local t_run
			t_run=$(psql_db bench -At <<SQL
SELECT clock_timestamp() AS t0 \gset
SELECT sql_archive_run(interval '$hot_window') \gset
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3);
SQL
)
			focused run_vs_sql sql_layout_run "$(ids)" seconds "$t_run" s
		fi
		q -c "VACUUM ANALYZE $(cur_rel "$layout")" >/dev/null
	fi
	n=$(ids)
	q -c "CREATE TABLE t_repacked AS SELECT * FROM t ORDER BY cid, ts" -c "CREATE INDEX ON t_repacked (cid, ts)" \
		-c "VACUUM ANALYZE t_repacked"
	rb=$(select_all_buffers t_repacked)
	bufs=$(select_all_buffers t)
	focused select_all_buffers repacked_$layout "$n" buffers "${rb%,*}" buffers
	if [ -n "$bb" ]; then
		focused select_all_buffers "$layout" "$n" buffers_before_run "${bb%,*}" buffers
		focused select_all_buffers "$layout" "$n" ratio_before_run "$(awk -v a="${bb%,*}" -v b="${rb%,*}" 'BEGIN { printf "%.2f", a / b }')" x
		focused select_all_buffers "$layout" "$n" buffers_after_run "${bufs%,*}" buffers
		focused select_all_buffers "$layout" "$n" ratio_after_run "$(awk -v a="${bufs%,*}" -v b="${rb%,*}" 'BEGIN { printf "%.2f", a / b }')" x
		focused select_all_buffers "$layout" "$n" ratio_cycle_mean "$(awk -v a="${bufs%,*}" -v c="${bb%,*}" -v b="${rb%,*}" 'BEGIN { printf "%.2f", (a + c) / 2 / b }')" x
		# with compaction: right after the compaction that follows the run, and
		# the cycle from there to a full tail
		local bc=$bufs st=off
		if is_ac "$layout" && [ "$compaction" != off ]; then
			st=$(compact_now)
			bc=$(select_all_buffers t)
			echo "   after the compaction ($st): ${bc%,*} buffers"
			focused select_all_buffers "$layout" "$n" buffers_after_compaction "${bc%,*}" buffers
			focused select_all_buffers "$layout" "$n" ratio_after_compaction "$(awk -v a="${bc%,*}" -v b="${rb%,*}" 'BEGIN { printf "%.2f", a / b }')" x
			focused select_all_buffers "$layout" "$n" ratio_cycle_mean_compacted "$(awk -v a="${bc%,*}" -v c="${bb%,*}" -v b="${rb%,*}" 'BEGIN { printf "%.2f", (a + c) / 2 / b }')" x
		fi
		local disk=",,,,"
		is_ac "$layout" && disk=$(archive_disk)
		echo "$layout,$final,$n,${bb%,*},${bufs%,*},${bc%,*},${rb%,*},$disk" >> "$res/cycle.csv"
	else
		focused select_all_buffers "$layout" "$n" buffers "${bufs%,*}" buffers
		focused select_all_buffers "$layout" "$n" ratio "$(awk -v a="${bufs%,*}" -v b="${rb%,*}" 'BEGIN { printf "%.2f", a / b }')" x
	fi
	q -c "DROP TABLE t_repacked"

	# target 7: the fragmentation function
	if [ "$(q -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'archive_cluster'")" = 1 ]; then
		q -c "CREATE EXTENSION IF NOT EXISTS archive_cluster" >/dev/null
	fi
	if [ "$(q -c "SELECT count(*) FROM pg_proc WHERE proname = 'archive_cluster_fragmentation' AND pronargs >= 3")" -ge 1 ]; then
		# the seed's table (plain), the registered view (ext) or table (tab);
		# the SQL design's archive table
		local rel="t" key="'cid'" k fr
		is_ac "$layout" && key="NULL"
		[ "$layout" = sql ] && rel="t_archive"
		for k in first second; do
			fr=$(psql_db bench -At -F ' ' <<SQL
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) FROM archive_cluster_fragmentation('$rel', $key, 200);
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3);
SQL
)
			focused fragmentation "$layout" "$n" "seconds_${k}_call" "$(echo "$fr" | tail -1)" s
		done
		psql_db bench -c "SELECT tier, keys_sampled, rows_sampled, round(avg_pages_per_key::numeric, 1) AS avg_pages,
			round(ideal_pages_per_key::numeric, 1) AS ideal, round(fragmentation_ratio::numeric, 2) AS ratio,
			round(rows_per_page_touched::numeric, 1) AS rows_per_page
			FROM archive_cluster_fragmentation('$rel', $key, 200)" | tee "$res/fragmentation_$layout.txt"
	else
		focused fragmentation "$layout" "$n" seconds not_available -
	fi

	if [ "$layout" != plain ]; then
		echo "-- $layout: p99 of concurrent inserts without and with a run"
		if [ "$layout" = ext ]; then
			# the same with other settings of the run's session (--p99-settings),
			# alternating, each twice (view mode only: table mode's runs are the
			# same mover; it is measured with the defaults, the verdict)
			local i=0 v
			for v in $p99_settings $p99_settings; do
				i=$((i + 1))
				echo "   with $v"
				echo "ext_s$i,$v" >> "$res/p99_settings.csv"
				p99_during_run ext "ext_s$i" "$v"
			done
			echo "   with the default settings"
		fi
		p99_during_run "$layout"
	fi

	if is_ac "$layout" && [ "$compaction" != off ]; then
		echo "-- $layout: p99 of concurrent inserts without and with a compaction"
		p99_during_run "$layout" "${layout}_compaction" "" compaction
		if [ "$layout" = ext ]; then
			# with other settings of the compaction's session
			# (--compaction-p99-settings), alternating, each twice
			local i=0 v r k
			for v in $compaction_p99_settings $compaction_p99_settings; do
				i=$((i + 1))
				# a compaction paced at r MB/s lasts about 20/r times as
				# long as one at the default's 20: so does the window
				r=$(echo "$v" | sed -n 's/.*compaction_max_wal_rate=\([0-9]*\).*/\1/p')
				k=$(awk -v r="${r:-0}" 'BEGIN { k = (r > 0) ? 20 / r : 1; if (k < 1) k = 1; print k }')
				echo "   compaction with $v"
				echo "ext_c$i,$v" >> "$res/compaction_p99_settings.csv"
				p99_during_run ext "ext_c$i" "$v" compaction "$k"
			done
		fi
		# write amplification: bytes written into the archive by runs and
		# compactions over the bytes archived (archive_cluster_runs, all of them)
		focused write_amplification "$layout" "$(ids)" bytes "$(q -c "SELECT round(sum(bytes_written)::numeric / nullif(sum(bytes_written) FILTER (WHERE kind = 'archive'), 0), 2) FROM archive_cluster_runs WHERE relation = 't'::regclass AND error IS NULL")" x
		focused write_amplification "$layout" "$(ids)" rows "$(q -c "SELECT round(sum(rows_moved)::numeric / nullif(sum(rows_moved) FILTER (WHERE kind = 'archive'), 0), 2) FROM archive_cluster_runs WHERE relation = 't'::regclass AND error IS NULL")" x
		focused write_amplification "$layout" "$(ids)" compactions "$(q -c "SELECT count(*) FROM archive_cluster_runs WHERE relation = 't'::regclass AND error IS NULL AND kind = 'compaction'")" -
		# the archive's disk: at every step (cycle.csv, archive_disk)
		q -c "SELECT '$layout', compaction_no, table_rows, rows_rewritten, bytes_rewritten, round(seconds::numeric, 3) FROM bench_compactions ORDER BY compaction_no" -F ',' >> "$res/compactions.csv"
	fi
	q -c "SELECT '$layout', run_no, table_rows, rows_moved, round(seconds::numeric, 3), how FROM bench_runs ORDER BY run_no" -F ',' >> "$res/runs.csv"
	[ "$keep" = 1 ] || rm -f "$raw"/*_"$layout"*.[0-9]* 2>/dev/null || true
	stop_server
	port=$((port + 1))
}

t_start=$(date +%s)
for layout in $layouts; do
	run_layout "$layout"
done
echo
echo "== report"
$PY "$here/lib/report.py" report "$res"
echo "== done in $(( $(date +%s) - t_start )) s; results in $res"
if [ "$docs" = 1 ]; then
	label=full
	[ "$quick" = 1 ] && label=quick
	mkdir -p "$top/docs/bench/$label"
	rm -f "$top/docs/bench/$label"/*
	cp "$res"/*.csv "$res"/*.png "$res"/*.txt "$res/summary.md" "$top/docs/bench/$label/" 2>/dev/null || true
	echo "== copied to docs/bench/$label/"
fi
cat "$res/summary.md"
