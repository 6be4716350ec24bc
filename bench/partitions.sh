#!/usr/bin/env bash
# Partitioned tables (mode => 'partitioned'): archive_cluster's passes over
# closed partitions against the same partitions CLUSTERed offline, side by
# side in one run, on one throw-away PostgreSQL 15 server (the postgres OS
# user, a data directory under /tmp, stopped by its pid at the end and on
# error).  The extension as installed: this script builds and installs
# nothing.
#
# The seed's table t(ts timestamp, id int, cid int, pad varchar(200)), 10,000
# customers, pads of 0-200 characters, ids in ts order, --rows rows generated
# once (the same rows every time) with ts spread evenly so that all
# customers' rows interleave as they arrive, partitioned by range of ts, one
# partition a day, --days partitions: the newest (the last ~12 hours, to 12
# hours ahead) is open, the others closed (every row older than the hot
# window, 1 hour).  Indexes (id) and (cid, ts), built after the fill.  Three
# copies, filled from the same rows in arrival order (id):
#   pt_plain  as filled;
#   pt_ac     registered (archive_cluster_register('pt_ac', '{cid,ts}', 'ts',
#             '1 hour', mode => 'partitioned')) and converged:
#             archive_cluster_run('pt_ac', max_batches => 1) until nothing is
#             due (the first passes), VACUUM of each closed partition, the
#             same again (the tail passes), VACUUM again; then one
#             more archive_cluster_run('pt_ac'), which should find nothing due;
#   pt_cl     each closed partition CLUSTERed on its (cid, ts) index, then
#             VACUUMed.
# Then:
#   2. "select all" buffers on the closed partitions: for --sample customers
#      (a fixed sample), EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM <t> WHERE
#      cid = $1 AND ts < <start of the open partition> ORDER BY ts: shared
#      hit + read buffers, mean per table, pt_ac / pt_cl (goal <= 1.1) and
#      pt_plain / pt_ac; heap pages per key (distinct blocks of the rows'
#      ctids); the same over every partition (the mix's "select all");
#   3. the cost of converging, per closed partition: each pass, VACUUM and
#      CLUSTER timed alone after a CHECKPOINT: seconds, WAL bytes (LSN
#      difference), the most extra disk the database held meanwhile
#      (sampled), the partition's heap and index pages after; against its
#      size as filled;
#   4. the seed's mixed workload (insert 25 %, update 25 % of the last hour,
#      select one 25 %, select hour 15 %, select all 10 %: bench/lib/part_*.pgbench)
#      on pt_plain and pt_ac, pgbench -M prepared -c 10 -j 2 -T --secs,
#      --rounds rounds in alternating order: tps, median ratio pt_ac / pt_plain;
#   5. p99 of concurrent inserts (-c 4 -j 2 -R --insert-rate, into the open
#      partition, per-transaction log) for --secs seconds with no job, then
#      for --secs seconds while jobs run back to back: forced passes
#      (archive_cluster_run('pt_ac', force => true, max_batches => 1): the
#      oldest closed partition) on pt_ac, CLUSTER of the same partition of
#      pt_cl; p99 during / without, --rounds rounds;
#   6. a REPEATABLE READ reader counts pt_ac's rows (seq scan and index),
#      a forced pass runs in another session (dblink) and commits, the
#      reader counts again; the same across CLUSTER of a pt_cl partition
#      (the reader's snapshot taken before it, on another table: CLUSTER
#      would wait for its lock otherwise);
#   7. REPACK (CONCURRENTLY) of PostgreSQL 19: not measured (says why).
# Prints a Markdown summary to stdout (progress goes to stderr) and writes it
# (summary.md) with CSVs (meta, leaves, converge, spill, sizes, buffers, mix, p99,
# rr, runs), pgbench outputs and logs (raw/) and the server's log into --out.
# As root (it runs the server as postgres); needs no standard input.
#
#   sudo bench/partitions.sh [--rows 11000000] [--days D] [--secs 30] [--rounds 4]
#        [--sample 200] [--insert-rate 500] [--shared-buffers 128MB] [--port 5820]
#        [--quick] [--out DIR]
#
# --days: default max(3, rows / 550,000 rounded): about one page of rows per
# customer per closed partition (10,000 customers x ~55 rows per page), 20 at
# 11M rows.  --quick: 1,100,000 rows, --secs 10, --rounds 2 (unless given).
# --insert-rate 0: the inserts of part 5 unthrottled.
set -euo pipefail

rows=11000000
days=""
secs=30
rounds=4
sample=200
insert_rate=500
shared_buffers=128MB
port=5820
quick=0
out=""
given=" "
args="$*"
while [ $# -gt 0 ]; do
	case "$1" in
		--rows|--days|--secs|--rounds|--sample|--insert-rate|--shared-buffers|--port|--out)
			[ $# -ge 2 ] || { echo "partitions.sh: $1 takes a value" >&2; exit 2; }
			v=${1#--}; v=${v//-/_}
			printf -v "$v" '%s' "$2"
			given="$given$v "
			shift 2 ;;
		--quick) quick=1; shift ;;
		-h|--help) sed -n '2,66p' "$0"; exit 0 ;;
		*) echo "partitions.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ "$quick" = 1 ]; then
	[[ "$given" == *" rows "* ]] || rows=1100000
	[[ "$given" == *" secs "* ]] || secs=10
	[[ "$given" == *" rounds "* ]] || rounds=2
fi
for v in rows secs rounds sample port; do
	case "${!v}" in ''|*[!0-9]*|0) echo "partitions.sh: --${v//_/-} takes a positive integer" >&2; exit 2 ;; esac
done
case "$insert_rate" in ''|*[!0-9]*) echo "partitions.sh: --insert-rate takes an integer (0: unthrottled)" >&2; exit 2 ;; esac
[ "$rows" -ge 20000 ] || { echo "partitions.sh: --rows must be at least 20000" >&2; exit 2; }
[ "$sample" -le 10000 ] || { echo "partitions.sh: --sample is at most 10000 (the customers)" >&2; exit 2; }
if [ -z "$days" ]; then
	days=$(( (rows + 275000) / 550000 ))
	[ "$days" -ge 3 ] || days=3
fi
case "$days" in ''|*[!0-9]*) echo "partitions.sh: --days takes an integer of at least 2" >&2; exit 2 ;; esac
[ "$days" -ge 2 ] && [ "$days" -le 1000 ] || { echo "partitions.sh: --days takes 2 to 1000" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
	echo "partitions.sh: run as root (it runs the server as postgres)" >&2
	exit 1
fi

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
[ -x "$PG_CONFIG" ] || { echo "partitions.sh: PostgreSQL 15 is not installed (bash test/setup.sh)" >&2; exit 1; }
bindir=$($PG_CONFIG --bindir)
sharedir=$($PG_CONFIG --sharedir)
pkglibdir=$($PG_CONFIG --pkglibdir)
if [ ! -f "$sharedir/extension/archive_cluster.control" ] || [ ! -f "$pkglibdir/archive_cluster.so" ]; then
	echo "partitions.sh: archive_cluster is not installed in PostgreSQL 15 (make install first; this script installs nothing)" >&2
	exit 1
fi
id postgres >/dev/null 2>&1 || { echo "partitions.sh: no postgres OS user" >&2; exit 1; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/partitions.XXXX)
else
	mkdir -p "$out"
fi
out=$(cd "$out" && pwd)
raw="$out/raw"
rm -rf "$raw"
mkdir -p "$raw"
rm -f "$out"/*.csv "$out/summary.md" "$out/progress.log"

# stdout is the summary's: everything else goes to stderr
exec 3>&1 1>&2 </dev/null
log() { echo "$*"; echo "$*" >> "$out/progress.log"; }
die() { log "partitions.sh: $*"; exit 1; }
t_start=$(date +%s)
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')

# --------------------------------------------------------------------------
# the server: initdb and start as postgres, stopped by its pid on exit
# --------------------------------------------------------------------------
as_pg() { runuser -u postgres -- "$@"; }
work=""
pgdata=""
server_pid=""
bg_pids=()
cleanup() {
	local rc=$? p i
	set +e
	for p in "${bg_pids[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		# fast shutdown (SIGINT), then immediate (SIGQUIT) if it lingers
		kill -INT "$server_pid"
		for i in $(seq 1 600); do
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$server_pid" 2>/dev/null; then
			echo "partitions.sh: the server (pid $server_pid) did not stop in 60 s: SIGQUIT" >&2
			kill -QUIT "$server_pid"
			sleep 2
		fi
	fi
	[ -z "$work" ] || [ ! -f "$work/log" ] || cp "$work/log" "$out/server.log"
	[ -z "$work" ] || rm -rf "$work"
	[ "$rc" = 0 ] || echo "partitions.sh: failed (exit $rc); see $out/progress.log and $out/server.log" >&2
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

work=$(mktemp -d /tmp/archive_cluster_partitions.XXXXXX)
chown postgres: "$work"
pgdata="$work/data"
[ ! -e "/tmp/.s.PGSQL.$port.lock" ] && [ ! -e "$work/.s.PGSQL.$port" ] || die "port $port is in use"
as_pg "$bindir/initdb" -D "$pgdata" -A trust >/dev/null
# no TCP (listen_addresses = ''): clients come through the socket in $work;
# the worker off: passes only when the bench runs them; autovacuum off while
# the copies are built and converged (on from part 4)
srv_opts="-p $port -k $work -c listen_addresses= -c shared_preload_libraries=archive_cluster"
for o in archive_cluster.enabled=off lc_messages=C "shared_buffers=$shared_buffers" max_wal_size=4GB \
	checkpoint_timeout=15min maintenance_work_mem=256MB autovacuum=off; do
	srv_opts="$srv_opts -c $o"
done
as_pg "$bindir/pg_ctl" -D "$pgdata" -w -t 120 -l "$work/log" -o "$srv_opts" start >/dev/null \
	|| { cat "$work/log" >&2; die "the server did not start"; }
server_pid=$(head -1 "$pgdata/postmaster.pid")

# clients run as root, as the postgres role, through the socket
psql_() { "$bindir/psql" -h "$work" -p "$port" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
q() { psql_ -d bench -At "$@" </dev/null; }			# q -c SQL ...
qf() { psql_ -d bench -At "$@"; }					# qf <<SQL (a script on stdin)
pgbench_() { "$bindir/pgbench" -h "$work" -p "$port" -U postgres "$@"; }
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

lib_so=$(sha1sum "$pkglibdir/archive_cluster.so" | cut -c1-12)
tree_so="not built in the tree"
[ ! -f "$top/archive_cluster.so" ] || tree_so=$(cmp -s "$top/archive_cluster.so" "$pkglibdir/archive_cluster.so" \
	&& echo "the same as the tree's build" || echo "DIFFERENT from the tree's build")
if [ -x /usr/lib/postgresql/19/bin/postgres ] && /usr/lib/postgresql/19/bin/postgres --version >/dev/null 2>&1; then
	repack="Not measured: a PostgreSQL 19 server is installed here ($(/usr/lib/postgresql/19/bin/postgres --version)), but this script runs one PostgreSQL 15 server; REPACK (CONCURRENTLY) needs a run of its own on 19."
else
	repack="Not measured: \`REPACK (CONCURRENTLY)\` is PostgreSQL 19's, and no PostgreSQL 19 server can run on this machine (no /usr/lib/postgresql/19/bin/postgres: PostgreSQL $("$bindir/postgres" --version | awk '{ print $3 }') only; the project compiles against 19's headers, it does not run 19). So neither its buffers and cost per partition nor the REPEATABLE READ reader's count across it are measured here."
fi
{
	echo "key,value"
	echo "date,$started_at"
	echo "command,bench/partitions.sh${args:+ $args}"
	echo "rows,$rows"
	echo "days,$days"
	echo "secs,$secs"
	echo "rounds,$rounds"
	echo "sample,$sample"
	echo "insert_rate,$insert_rate"
	echo "shared_buffers,$shared_buffers"
	echo "port,$port"
	echo "cpu,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//;s/,/ /g')"
	echo "cores,$(nproc)"
	echo "postgres,$("$bindir/postgres" --version)"
	echo "git,$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo none)$(git -C "$top" diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
	echo "library,archive_cluster.so $lib_so ($tree_so)"
	echo "\"repack\",\"${repack//\"/\"\"}\""
} > "$out/meta.csv"

log "== partitions: $rows rows, $days daily partitions ($((days - 1)) closed), out $out, server pid $server_pid, port $port (socket in $work)"
log "   the installed library: $lib_so, $tree_so"

# --------------------------------------------------------------------------
# 1. the three copies
# --------------------------------------------------------------------------
psql_ -d postgres -c "CREATE DATABASE bench" </dev/null
q -c "CREATE EXTENSION archive_cluster" -c "CREATE EXTENSION dblink" -f "$here/lib/part_setup.sql" >/dev/null
[ "$(q -c "SELECT extversion FROM pg_extension WHERE extname = 'archive_cluster'")" != 1.0 ] \
	|| die "archive_cluster 1.0 has no partitioned mode"
dboid=$(q -c "SELECT oid FROM pg_database WHERE datname = 'bench'")
t0=$(date +%s.%N)
q -c "SET synchronous_commit = off" -c "CALL part_src($rows, $days)"
t_open=$(q -c "SELECT t_open FROM part_bench")
log "== 1. the rows generated ($(secs_since "$t0") s); the open partition starts at $t_open"
for tbl in pt_plain pt_ac pt_cl; do
	t0=$(date +%s.%N)
	q -c "SET maintenance_work_mem = '512MB'" -c "CALL part_create('$tbl')" -c "CALL part_index('$tbl')" \
		-c "VACUUM ANALYZE $tbl"
	log "   $tbl: filled, indexed and vacuumed in $(secs_since "$t0") s"
done
q -c "DROP TABLE src" -c "CHECKPOINT"
# each leaf as filled
echo "table,leaf,closed,rows,heap_pages,index_pages" > "$out/leaves.csv"
for tbl in pt_plain pt_ac pt_cl; do
	q -F , -c "SELECT '$tbl', leaf, closed, c.reltuples::bigint,
		pg_relation_size(leaf) / 8192, pg_indexes_size(leaf) / 8192
		FROM part_leaves('$tbl') JOIN pg_class c ON c.oid = leaf" >> "$out/leaves.csv"
done
nclosed=$(q -c "SELECT count(*) FROM part_leaves('pt_ac') WHERE closed")
[ "$nclosed" = $((days - 1)) ] || die "expected $((days - 1)) closed partitions, found $nclosed"
echo "table,stage,closed_heap,closed_index,open_heap,open_index" > "$out/sizes.csv"
sizes() {	# sizes TABLE STAGE: one line of sizes.csv
	echo "$1,$2,$(q -F , -c "SELECT c.heap_pages, c.index_pages, o.heap_pages, o.index_pages
		FROM part_sizes('$1', true) c, part_sizes('$1', false) o")" >> "$out/sizes.csv"
}
for tbl in pt_plain pt_ac pt_cl; do
	sizes "$tbl" filled
done

# --------------------------------------------------------------------------
# 3 (measured while building). Converging: pt_ac's passes, pt_cl's CLUSTERs
# --------------------------------------------------------------------------
# The database's disk (its directory and the temporary files'), bytes
disk_now() { { du -sb "$pgdata/base/$dboid" "$pgdata/base/pgsql_tmp" 2>/dev/null || true; } | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
sampler=""
sampler_start() {	# the most disk_now shows, every 50 ms, into $work/peak (ends with the server at the latest)
	disk_now > "$work/peak"
	(
		m=$(cat "$work/peak")
		while kill -0 "$server_pid" 2>/dev/null; do
			v=$(disk_now)
			if [ "$v" -gt "$m" ]; then m=$v; echo "$m" > "$work/peak"; fi
			sleep 0.05
		done
	) >/dev/null 2>&1 &
	sampler=$!
	bg_pids+=("$sampler")
}
sampler_stop() {	# prints the peak
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	local v m
	v=$(disk_now)
	m=$(cat "$work/peak")
	[ "$v" -le "$m" ] || m=$v
	echo "$m"
}
# op SQL: SQL in one session between two readings of the clock and the WAL
# position; prints SQL's output, then "seconds|wal_bytes|peak_extra_bytes"
op() {
	local base peak res
	q -c "CHECKPOINT"
	base=$(disk_now)
	sampler_start
	res=$(qf <<SQL
SELECT pg_current_wal_lsn() AS l0, clock_timestamp() AS t0 \gset
$1
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3) || '|' || pg_wal_lsn_diff(pg_current_wal_lsn(), :'l0');
SQL
) || { sampler_stop >/dev/null; echo "$res"; return 1; }
	peak=$(sampler_stop)
	echo "$res|$((peak - base))"
}
pages_of() { q -F , -c "SELECT pg_relation_size('$1') / 8192, pg_indexes_size('$1') / 8192"; }

echo "table,leaf,phase,seconds,wal_bytes,heap_pages_after,index_pages_after,peak_extra_bytes,rows,paced_s,status,detail" > "$out/converge.csv"
q -c "SELECT archive_cluster_register('pt_ac', '{cid,ts}', 'ts', '1 hour', mode => 'partitioned')" >/dev/null
# passes PHASE: archive_cluster_run('pt_ac', max_batches => 1) until nothing is due
passes() {
	local phase=$1 n=0 res last status moved d leaf why
	while :; do
		res=$(op "SELECT status || '|' || rows_moved FROM archive_cluster_run('pt_ac', max_batches => 1);") \
			|| die "archive_cluster_run('pt_ac') failed: $res"
		status=$(echo "$res" | head -1 | cut -d'|' -f1)
		moved=$(echo "$res" | head -1 | cut -d'|' -f2)
		last=$(echo "$res" | tail -1)
		if [ "$status" = "nothing due" ]; then
			[ "$phase" = pass3 ] && echo "pt_ac,,check,${last%%|*},$(echo "$last" | cut -d'|' -f2),,,,0,,nothing due," >> "$out/converge.csv"
			break
		fi
		[ "$status" = passed ] || die "archive_cluster_run('pt_ac', max_batches => 1) in $phase: status '$status' ($res)"
		# the pass's run-log row: the leaf, why it was due, paced time
		d=$(q -F '|' -c "SELECT detail, round(extract(epoch FROM paced)::numeric, 2), rows_busy FROM archive_cluster_runs
			WHERE relation = 'pt_ac'::regclass AND kind = 'pass' ORDER BY run_id DESC LIMIT 1")
		leaf=$(echo "$d" | sed -n 's/^leaf public\.\([a-z_0-9]*\) .*/\1/p')
		why=$(echo "$d" | sed -n 's/^leaf [^ ]* (\([^)]*\)).*/\1/p')
		[ -n "$leaf" ] || die "no leaf in the run log's detail: $d"
		echo "pt_ac,$leaf,$phase,${last%%|*},$(echo "$last" | cut -d'|' -f2),$(pages_of "$leaf"),${last##*|},$moved,$(echo "$d" | cut -d'|' -f2),$why,\"$(echo "$d" | cut -d'|' -f1 | sed 's/"/""/g')\"" >> "$out/converge.csv"
		log "   $phase: $leaf ($why): $moved rows, ${last%%|*} s, $(( $(echo "$last" | cut -d'|' -f2) / 1048576 )) MB of WAL, now $(pages_of "$leaf" | tr , /) heap/index pages"
		n=$((n + 1))
		# a leaf is due at most once a phase: more passes than closed leaves never end
		[ "$n" -le "$nclosed" ] || die "$phase: $n passes over $nclosed closed partitions: the passes do not stop being due (see $out/converge.csv)"
	done
	if [ "$phase" = pass3 ] && [ "$n" -gt 0 ]; then
		echo "pt_ac,,check,,,,,,0,,passed again,\"$n partitions passed again after the tail pass and its VACUUM: not converged\"" >> "$out/converge.csv"
		log "   NOT CONVERGED: after the tail pass and its VACUUM, archive_cluster_run passed $n partitions again"
	fi
	[ "$phase" = pass3 ] || [ "$n" -gt 0 ] || die "$phase: nothing was due (see $out/converge.csv)"
}
vacuums() {	# vacuums TABLE PHASE: VACUUM of each closed leaf
	local leaf res
	for leaf in $(q -c "SELECT leaf FROM part_leaves('$1') WHERE closed"); do
		res=$(op "VACUUM $leaf;") || die "VACUUM $leaf failed: $res"
		echo "$1,$leaf,$2,${res%%|*},$(echo "$res" | cut -d'|' -f2),$(pages_of "$leaf"),${res##*|},,,," >> "$out/converge.csv"
	done
	log "   $2: VACUUM of each closed partition of $1"
}
log "== 3. converging pt_ac: run, VACUUM, run, VACUUM ($nclosed closed partitions)"
t0=$(date +%s.%N)
passes pass1
sizes pt_ac "after the first passes"
vacuums pt_ac vacuum1
passes pass2
vacuums pt_ac vacuum2
# what the tail pass wrote past the end of the file it found (the
# pass's rows less the empty pages at the front): what keeps the VACUUM
# after it from truncating the partition
echo "leaf,filled_pages,pages_before_pass2,pages_after,rows_past_the_end,pages_past_the_end" > "$out/spill.csv"
for leaf in $(q -c "SELECT leaf FROM part_leaves('pt_ac') WHERE closed"); do
	before=$(awk -F, -v l="$leaf" '$2 == l && $3 == "vacuum1" { print $6 }' "$out/converge.csv")
	filled=$(awk -F, -v l="$leaf" '$1 == "pt_ac" && $2 == l { print $5 }' "$out/leaves.csv")
	echo "$leaf,$filled,$before,$(q -F , -c "SELECT pg_relation_size('$leaf') / 8192,
		(SELECT count(*) FROM $leaf WHERE (ctid::text::point)[0] >= $before),
		(SELECT count(DISTINCT (ctid::text::point)[0]) FROM $leaf WHERE (ctid::text::point)[0] >= $before)")" >> "$out/spill.csv"
done
# converged: nothing is due any more
passes pass3
log "   converged in $(secs_since "$t0") s"
q -c "ANALYZE pt_ac"
sizes pt_ac converged
# the rows on each leaf's last pages: what keeps VACUUM from truncating it
for leaf in $(q -c "SELECT leaf FROM part_leaves('pt_ac') WHERE closed"); do
	q -F ' ' -c "SELECT 'block ' || lo || '-' || hi || ':', n, 'rows' FROM (SELECT (ctid::text::point)[0]::int / 100 * 100 AS lo,
		(ctid::text::point)[0]::int / 100 * 100 + 99 AS hi, count(*) AS n FROM $leaf GROUP BY 1, 2) s ORDER BY lo" \
		> "$raw/tail_$leaf.txt"
done

log "== 3. CLUSTER of each closed partition of pt_cl"
t0=$(date +%s.%N)
for leaf in $(q -c "SELECT leaf FROM part_leaves('pt_cl') WHERE closed"); do
	idx=$(q -c "SELECT part_cluster_index('$leaf')")
	res=$(op "CLUSTER $leaf USING $idx;") || die "CLUSTER $leaf failed: $res"
	n=$(q -c "SELECT count(*) FROM $leaf")
	echo "pt_cl,$leaf,cluster,${res%%|*},$(echo "$res" | cut -d'|' -f2),$(pages_of "$leaf"),${res##*|},$n,,," >> "$out/converge.csv"
	log "   CLUSTER $leaf: ${res%%|*} s, $(( $(echo "$res" | cut -d'|' -f2) / 1048576 )) MB of WAL, peak extra disk $(( ${res##*|} / 1048576 )) MB"
done
vacuums pt_cl vacuum
q -c "ANALYZE pt_cl"
sizes pt_cl clustered
log "   done in $(secs_since "$t0") s"
q -c "CHECKPOINT"

# --------------------------------------------------------------------------
# 2. "select all" buffers on the closed partitions (and on all of them)
# --------------------------------------------------------------------------
cids=$(qf <<SQL | tail -1
SELECT setseed(0.42) \gset
SELECT string_agg(c::text, ',' ORDER BY c) FROM (SELECT c FROM generate_series(0, 9999) c ORDER BY random() LIMIT $sample) s;
SQL
)
log "== 2. select all of $sample customers: buffers"
echo "table,scope,cid,nrows,buffers,heap_pages" > "$out/buffers.csv"
for tbl in pt_plain pt_ac pt_cl; do
	q -F , -c "SELECT '$tbl', 'closed', * FROM part_select_all('$tbl', '{$cids}', '$t_open')" >> "$out/buffers.csv"
	q -F , -c "SELECT '$tbl', 'all', * FROM part_select_all('$tbl', '{$cids}', NULL)" >> "$out/buffers.csv"
	c1=${cids%%,*}
	q -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM $tbl WHERE cid = $c1 AND ts < '$t_open' ORDER BY ts" \
		> "$raw/plan_${tbl}_closed.txt"
	q -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM $tbl WHERE cid = $c1 ORDER BY ts" \
		> "$raw/plan_${tbl}_all.txt"
	log "   $tbl: $(awk -F, -v t="$tbl" '$1 == t && $2 == "closed" { n++; b += $5; h += $6 } END { printf "%.1f buffers, %.1f heap pages per key (closed partitions)", b / n, h / n }' "$out/buffers.csv")"
done

# --------------------------------------------------------------------------
# 4. the seed's mixed workload, pt_plain and pt_ac
# --------------------------------------------------------------------------
q -c "ALTER SYSTEM SET autovacuum = on" -c "SELECT pg_reload_conf()" >/dev/null
mkdir -p "$work/pgb"
for tbl in pt_plain pt_ac pt_cl; do
	for f in insert update select_one select_hour select_all; do
		sed "s/@table@/$tbl/g" "$here/lib/part_$f.pgbench" > "$work/pgb/${tbl}_$f.pgbench"
	done
done
mix_one() {	# mix_one ROUND POSITION TABLE: one line of mix.csv
	local r=$1 pos=$2 tbl=$3 f="$raw/mix_r$1_$3.out" tps lat ntx fail retr lats
	q -c "CHECKPOINT"
	pgbench_ -n -M prepared --max-tries=10 -c 10 -j 2 -T "$secs" \
		-f "$work/pgb/${tbl}_insert.pgbench@25" -f "$work/pgb/${tbl}_update.pgbench@25" \
		-f "$work/pgb/${tbl}_select_one.pgbench@25" -f "$work/pgb/${tbl}_select_hour.pgbench@15" \
		-f "$work/pgb/${tbl}_select_all.pgbench@10" bench > "$f" 2>&1 || { cat "$f"; die "pgbench failed: $f"; }
	tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$f" | head -1)
	lat=$(sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' "$f" | head -1)
	ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$f" | head -1)
	fail=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$f" | head -1)
	retr=$(sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p' "$f" | head -1)
	[ -n "$tps" ] || { cat "$f"; die "no tps in $f"; }
	# each script's latency average, in the order of the -f options
	lats=$(awk '/^SQL script [0-9]+:/ { s++ } /^ - latency average = / { l[s] = $5 } END { for (i = 1; i <= 5; i++) printf ",%s", l[i] }' "$f")
	echo "$r,$pos,$tbl,$tps,$lat,$ntx,${fail:-0},${retr:-0}$lats" >> "$out/mix.csv"
	log "   round $r: $tbl: $tps tps (select all $(echo "$lats" | cut -d, -f6) ms; failed ${fail:-0}, retried ${retr:-0})"
	q -c "VACUUM $tbl"
}
log "== 4. the mixed workload: pgbench -c 10 -j 2 -T $secs, $rounds rounds"
echo "round,position,table,tps,latency_avg_ms,transactions,failed,retried,lat_insert,lat_update,lat_select_one,lat_select_hour,lat_select_all" > "$out/mix.csv"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="pt_plain pt_ac"; else order="pt_ac pt_plain"; fi
	pos=1
	for tbl in $order; do
		mix_one "$r" "$pos" "$tbl"
		pos=$((pos + 1))
	done
done

# --------------------------------------------------------------------------
# 5. p99 of inserts into the open partition, without and during jobs on a
#    closed one
# --------------------------------------------------------------------------
rate_opt=()
[ "$insert_rate" = 0 ] || rate_opt=(-R "$insert_rate")
first_ac=$(q -c "SELECT leaf FROM part_leaves('pt_ac') WHERE closed LIMIT 1")
first_cl=$(q -c "SELECT leaf FROM part_leaves('pt_cl') WHERE closed LIMIT 1")
idx_cl=$(q -c "SELECT part_cluster_index('$first_cl')")
inserts() {	# inserts LABEL TABLE: pgbench in the background ($pgb), its log in raw/LABEL.*
	(cd "$raw" && exec "$bindir/pgbench" -h "$work" -p "$port" -U postgres -n -M prepared --max-tries=10 -c 4 -j 2 \
		-T "$secs" "${rate_opt[@]}" --log --log-prefix="$1" -f "$work/pgb/${2}_insert.pgbench" bench \
		> "$raw/$1.out" 2>&1) &
	pgb=$!
	bg_pids+=("$pgb")
}
jobs_loop() {	# jobs_loop JOBFILE SQL: SQL back to back while pgbench ($pgb) runs: "start,end,result" lines
	local t0 t1 res
	sleep 2
	while kill -0 "$pgb" 2>/dev/null; do
		t0=$(date +%s.%N)
		res=$(q -c "$2" 2>&1 | tr '\n,' ' ;') || true
		t1=$(date +%s.%N)
		echo "$t0,$t1,$res" >> "$1"
	done
}
waits_start() {	# waits_start LABEL: what the inserting sessions wait for, from 2 s in to 1 s before pgbench ends
	(sleep 2; q -c "CALL part_sample_waits('$1', $secs - 3)" >/dev/null) &
	waiter=$!
	bg_pids+=("$waiter")
}
waits_of() {	# waits_of LABEL: the most frequent waits, as shares of the samples
	q -c "SELECT coalesce(string_agg(w || ' ' || pct || '%', '; ' ORDER BY n DESC), '')
		FROM (SELECT wait AS w, count(*) AS n, round(100.0 * count(*) / sum(count(*)) OVER ())::int AS pct
			  FROM part_waits WHERE label = '$1' GROUP BY 1) s" \
		| sed 's/"//g'
}
echo "round,table,window,inserts,failed,avg_ms,p50_ms,p99_ms,jobs,job_seconds,paced_s,jobs_result,waits" > "$out/p99.csv"
p99_one() {	# p99_one ROUND TABLE
	local r=$1 tbl=$2 label jf sql w0 st line nj js paced="" res
	# without a job
	label="p99_r${r}_${tbl}_none"
	q -c "CHECKPOINT"
	inserts "$label" "$tbl"
	[ "$secs" -le 3 ] || waits_start "$label"
	wait "$pgb" || { cat "$raw/$label.out"; die "pgbench failed: $raw/$label.out"; }
	[ "$secs" -le 3 ] || wait "$waiter" || true
	st=$("$PY" "$here/lib/part_report.py" p99 "$raw/$label")
	echo "$r,$tbl,none,$st,0,,,,\"$(waits_of "$label")\"" >> "$out/p99.csv"
	# during jobs
	label="p99_r${r}_${tbl}_job"
	jf="$raw/$label.jobs"
	: > "$jf"
	if [ "$tbl" = pt_ac ]; then
		sql="SELECT status || ' ' || rows_moved FROM archive_cluster_run('pt_ac', force => true, max_batches => 1)"
	else
		sql="CLUSTER $first_cl USING $idx_cl"
	fi
	q -c "CHECKPOINT"
	w0=$(q -c "SELECT now()")
	inserts "$label" "$tbl"
	[ "$secs" -le 3 ] || waits_start "$label"
	jobs_loop "$jf" "$sql"
	wait "$pgb" || { cat "$raw/$label.out"; die "pgbench failed: $raw/$label.out"; }
	[ "$secs" -le 3 ] || wait "$waiter" || true
	st=$("$PY" "$here/lib/part_report.py" p99 "$raw/$label" "$jf")
	nj=$(wc -l < "$jf")
	js=$(awk -F, '{ s += $2 - $1 } END { printf "%.1f", s }' "$jf")
	res=$(cut -d, -f3 "$jf" | sort | uniq -c | awk '{ $1 = $1 "x"; print }' | paste -sd';' | sed 's/ *$//')
	if [ "$tbl" = pt_ac ]; then
		paced=$(q -c "SELECT round(coalesce(sum(extract(epoch FROM paced)), 0)::numeric, 1) FROM archive_cluster_runs
			WHERE relation = 'pt_ac'::regclass AND kind = 'pass' AND started_at >= '$w0'")
		res="$res (leaves: $(q -c "SELECT string_agg(DISTINCT substring(detail from '^leaf public\.([a-z_0-9]*)') || ' ' ||
			substring(detail from '^leaf [^ ]* \(([^)]*)\)'), ', ') FROM archive_cluster_runs
			WHERE relation = 'pt_ac'::regclass AND kind = 'pass' AND started_at >= '$w0'"))"
	fi
	echo "$r,$tbl,job,$st,$nj,$js,$paced,\"$res\",\"$(waits_of "$label")\"" >> "$out/p99.csv"
	log "   round $r: $tbl: p99 $(awk -F, -v r="$r" -v t="$tbl" '$1 == r && $2 == t && $3 == "none" { print $8 }' "$out/p99.csv") ms without a job, $(echo "$st" | cut -d, -f5) ms during $nj jobs ($js s${paced:+, paced $paced s}: $res); the inserts waited for: $(waits_of "$label")"
	# the dead rows of the jobs, and the inserts' own
	q -c "VACUUM $tbl"
}
log "== 5. p99 of inserts (-c 4 -j 2 -T $secs${rate_opt[*]:+ ${rate_opt[*]}}) into the open partition, with no job and during passes ($first_ac) or CLUSTER ($first_cl), $rounds rounds"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="pt_ac pt_cl"; else order="pt_cl pt_ac"; fi
	for tbl in $order; do
		p99_one "$r" "$tbl"
	done
done

# --------------------------------------------------------------------------
# 6. a REPEATABLE READ reader across a pass, and across CLUSTER
# --------------------------------------------------------------------------
log "== 6. a REPEATABLE READ reader's counts across a pass (pt_ac) and across CLUSTER (pt_cl)"
conn="host=$work port=$port user=postgres dbname=bench"
echo "case,text" > "$out/rr.csv"
res=$(qf <<SQL | tail -1
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) AS c1 FROM pt_ac \gset
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SELECT count(*) AS i1 FROM pt_ac WHERE cid >= 0 \gset
SELECT r AS job FROM dblink('$conn', \$\$SELECT status || ', ' || rows_moved || ' rows' FROM archive_cluster_run('pt_ac', force => true, max_batches => 1)\$\$) AS t(r text) \gset
SELECT count(*) AS i2 FROM pt_ac WHERE cid >= 0 \gset
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS c2 FROM pt_ac \gset
COMMIT;
SELECT count(*) AS c3 FROM pt_ac \gset
SELECT coalesce(substring(detail from '^leaf public\.([a-z_0-9]*)'), '?') AS leaf FROM archive_cluster_runs
	WHERE kind = 'pass' ORDER BY run_id DESC LIMIT 1 \gset
SELECT :c1 || '|' || :i1 || '|' || :'job' || ' (' || :'leaf' || ')|' || :i2 || '|' || :c2 || '|' || :c3;
SQL
)
IFS='|' read -r c1 i1 job i2 c2 c3 <<< "$res"
same=$([ "$c1" = "$c2" ] && [ "$i1" = "$i2" ] && [ "$c1" = "$i1" ] && echo "the same" || echo "**DIFFERENT**")
txt="pass: the reader counted $c1 rows of pt_ac (seq scans; $i1 through the (cid, ts) indexes), then a forced pass ran in another session and committed (archive_cluster_run: $job); the reader counted again: $c2 ($i2 through the indexes): $same. A new snapshot after: $c3."
echo "pass,\"$txt\"" >> "$out/rr.csv"
log "   $txt"
c0=$(q -c "SELECT count(*) FROM pt_cl")
res=$(qf <<SQL | tail -1
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM pt_plain WHERE false \gset
SELECT r AS job FROM dblink('$conn', 'CLUSTER $first_cl USING $idx_cl') AS t(r text) \gset
SELECT count(*) AS c1 FROM pt_cl \gset
COMMIT;
SELECT count(*) AS c2 FROM pt_cl \gset
SELECT :c1 || '|' || :c2;
SQL
)
IFS='|' read -r c1 c2 <<< "$res"
same=$([ "$c0" = "$c1" ] && echo "the same" || echo "**DIFFERENT**")
txt="CLUSTER: pt_cl held $c0 rows; a reader took its snapshot (on another table: CLUSTER waits for a reader's lock on the partition), CLUSTER $first_cl ran in another session and committed, then the reader counted pt_cl: $c1: $same. A new snapshot after: $c2."
echo "cluster,\"$txt\"" >> "$out/rr.csv"
log "   $txt"

# --------------------------------------------------------------------------
# the summary
# --------------------------------------------------------------------------
q -F , -c "SELECT run_id, kind, started_at, round(extract(epoch FROM duration)::numeric, 3), round(extract(epoch FROM paced)::numeric, 3),
	rows_moved, bytes_written, rows_busy, '\"' || replace(coalesce(detail, ''), '\"', '\"\"') || '\"',
	'\"' || replace(coalesce(error, ''), '\"', '\"\"') || '\"' FROM archive_cluster_runs ORDER BY run_id" \
	| { echo "run_id,kind,started_at,seconds,paced_s,rows_moved,bytes_written,rows_busy,detail,error"; cat; } > "$out/runs.csv"
echo "duration_s,$(( $(date +%s) - t_start ))" >> "$out/meta.csv"
"$PY" "$here/lib/part_report.py" summary "$out"
cat "$out/summary.md" >&3
log "== done in $(( $(date +%s) - t_start )) s; results in $out"
