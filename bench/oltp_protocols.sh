#!/usr/bin/env bash
# The per-statement cost of a registered table (issue 41), side by side in one
# run: a throw-away PostgreSQL 15 server as the postgres OS user, three
# databases built alike with the seed's table t(ts, id, cid, pad) (10,000
# customers, pad 0-200 characters, primary key (id), index (cid, ts)), --rows
# rows filled by one INSERT ... SELECT, ts spread over 100 hours so that the
# last hour holds ~1% of them:
#   plain  the table as it is;
#   view   registered (archive_cluster_register('t', '{cid,ts}', 'ts',
#          '1 hour')), then archive_cluster_run(force => true): all but the
#          last hour in t_archive;
#   tab    the same with mode => 'table'.
# Then, in --rounds rounds, the order of the three databases rotated each
# round (each takes each place):
#   (a) planning time: EXPLAIN (SUMMARY ON) of SELECT * FROM t WHERE id = k
#       and of UPDATE t SET pad = 'x' WHERE id = k (planned, not executed),
#       k a recent id (current tier) and an archived id, --plans times each
#       per round in one psql session per database (warm relcache; 5 warm-up
#       loops dropped): "Planning Time", median and p90, ratio to plain.  And
#       the same statements as generic plans (plan_cache_mode =
#       force_generic_plan, PREPARE): a cached plan's planning time is ~0, so
#       EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) EXECUTE is measured (the
#       UPDATE inside BEGIN/ROLLBACK) and its "Execution Time" read instead
#       (executor start, where run-time pruning happens, included);
#   (b) OLTP: pgbench -c 10 -j 2 -T --seconds, insert, update and select
#       one 1:1:1 (target 3; update and select one pick ids among the last
#       3600, the current tier) with two key forms: "initplan",
#       bench/lib/insert, update and select_one.pgbench, whose id is
#       (SELECT last_value FROM t_id_seq) - :off, an InitPlan; "literal",
#       insert.pgbench with update_literal and select_one_literal.pgbench,
#       which fetch that id first (\gset) and send it as a constant, as an
#       application (Django) does; each with -M simple and -M prepared: four
#       (protocol, keys) runs per database and round, in the order simple
#       initplan, simple literal, prepared initplan, prepared literal in odd
#       rounds, reversed in even ones (--keys initplan or literal: that form
#       only); tps per round, medians, ratio to plain; a CHECKPOINT before
#       and a VACUUM after each;
#   (c) COPY FROM of --copy-rows new rows (new ids, ts now) into each
#       (target 6), the same file for the three in a round, a new file each
#       round; wall time and the backend's CPU, medians, ratio to plain.
# Right after that one run, the current tier's heap still has the pages of
# all the rows it held, ~1% of them left (the planner may then prefer a
# bitmap scan for a look-up by id, which table mode's tier look-up does not
# take); --compact-current rewrites it (VACUUM FULL of t_current, or of t's
# own rows in table mode) to the size of its rows, as a tier refilled by
# inserts would be.
# Prints a Markdown summary to stdout (progress goes to stderr) and writes it
# (summary.md) with raw CSVs (setup, plan, oltp, copy) and pgbench outputs
# into --out.  As root (it installs PostgreSQL 15 and the extension with
# bench/lib/throwaway.sh).
#
#   sudo bench/oltp_protocols.sh [--rows 1100000] [--plans 300] [--seconds 15]
#        [--rounds 3] [--copy-rows 200000] [--shared-buffers 128MB]
#        [--keys initplan|literal|both] [--compact-current] [--out DIR]
set -euo pipefail

rows=1100000
plans=300
seconds=15
rounds=3
copy_rows=200000
shared_buffers=128MB
compact_current=0
keys=both
out=""
args="$*"
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=$2; shift 2 ;;
		--plans) plans=$2; shift 2 ;;
		--seconds) seconds=$2; shift 2 ;;
		--rounds) rounds=$2; shift 2 ;;
		--copy-rows) copy_rows=$2; shift 2 ;;
		--shared-buffers) shared_buffers=$2; shift 2 ;;
		--keys) keys=$2; shift 2 ;;
		--compact-current) compact_current=1; shift ;;
		--out) out=$2; shift 2 ;;
		-h|--help) sed -n '2,54p' "$0"; exit 0 ;;
		*) echo "oltp_protocols.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
for v in rows plans seconds rounds copy_rows; do
	case "${!v}" in ''|*[!0-9]*) echo "oltp_protocols.sh: --${v//_/-} takes a positive integer" >&2; exit 2 ;; esac
	[ "${!v}" -gt 0 ] || { echo "oltp_protocols.sh: --${v//_/-} takes a positive integer" >&2; exit 2; }
done
case "$keys" in
	initplan|literal|both) ;;
	*) echo "oltp_protocols.sh: --keys takes initplan, literal or both" >&2; exit 2 ;;
esac
[ "$rows" -ge 10000 ] || { echo "oltp_protocols.sh: --rows must be at least 10000" >&2; exit 2; }
# COPY's ids: 1,000,000,000 + round x copy_rows + i, beyond any id of the bench
[ $((rounds * copy_rows)) -lt 1000000000 ] || { echo "oltp_protocols.sh: --rounds x --copy-rows too large" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
	echo "oltp_protocols.sh: run as root (it installs packages, runs the server as postgres)" >&2
	exit 1
fi

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/oltp_protocols.XXXX)
else
	mkdir -p "$out"
fi
out=$(cd "$out" && pwd)
raw="$out/raw"
mkdir -p "$raw"

# stdout is the summary's: everything else (progress, make) goes to stderr
exec 3>&1 1>&2
log() { echo "$*"; echo "$*" >> "$out/progress.log"; }
t_start=$(date +%s)
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')

. "$here/lib/throwaway.sh"
trap 'exit 130' INT TERM
throwaway_start protocols 5796 archive_cluster.enabled=off lc_messages=C "shared_buffers=$shared_buffers" \
	max_wal_size=4GB checkpoint_timeout=15min maintenance_work_mem=256MB
mkdir -p "$work/lib"
cp "$here"/lib/insert.pgbench "$here"/lib/update.pgbench "$here"/lib/select_one.pgbench \
	"$here"/lib/update_literal.pgbench "$here"/lib/select_one_literal.pgbench "$here"/lib/seed_table.sql "$work/lib/"
chown -R postgres: "$work/lib"
log "== oltp_protocols: $rows rows per database, out $out, server pid $(head -1 "$pgdata/postmaster.pid"), port $throwaway_port"

dbs=(plain view tab)
# the database at place K (0-2) of round R (1-...): each takes each place in turn
db_at() { echo "${dbs[$(( ($2 + $1 - 1) % 3 ))]}"; }
# a tier's rows: the current tier of each layout (plain: the whole table)
cur_rel() { case "$1" in plain) echo t ;; view) echo t_current ;; tab) echo "ONLY t" ;; esac; }
# what VACUUM needs to name (VACUUM of an inheritance parent does not recurse)
vac_rels() { case "$1" in plain) echo t ;; view) echo "t_current, t_archive" ;; tab) echo "t, t_archive" ;; esac; }
q() { local db=$1; shift; psql -d "$db" -At "$@"; }
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

{
	echo "key,value"
	echo "date,$started_at"
	echo "command,bench/oltp_protocols.sh${args:+ $args}"
	echo "rows,$rows"
	echo "plans,$plans"
	echo "seconds,$seconds"
	echo "rounds,$rounds"
	echo "copy_rows,$copy_rows"
	echo "shared_buffers,$shared_buffers"
	echo "compact_current,$compact_current"
	echo "keys,$keys"
	echo "cpu,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//;s/,/ /g')"
	echo "cores,$(nproc)"
	echo "postgres,$("$bindir/postgres" --version)"
	echo "git,$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo none)$(git -C "$top" diff --quiet 2>/dev/null || echo ' (dirty tree)')"
} > "$out/meta.csv"

# --------------------------------------------------------------------------
# the three databases, built side by side (one session each)
# --------------------------------------------------------------------------
build_db() {	# build_db DB: fill, index, register and archive; one line of setup.csv
	local db=$1 t0 fill_s run_s="" ext=""
	[ "$db" = plain ] || ext="CREATE EXTENSION archive_cluster;"
	t0=$(date +%s.%N)
	# the seed's table, the same rows in the three (lib/seed_table.sql)
	[ -z "$ext" ] || q "$db" -c "$ext" >/dev/null
	q "$db" -v rows="$rows" -f "$work/lib/seed_table.sql" >/dev/null
	q "$db" -c "ANALYZE t" >/dev/null
	fill_s=$(secs_since "$t0")
	if [ "$db" != plain ]; then
		local mode=""
		[ "$db" = tab ] && mode=", mode => 'table'"
		t0=$(date +%s.%N)
		# not paced (the other databases' builds write meanwhile)
		q "$db" -c "SELECT archive_cluster_register('t', '{cid,ts}', 'ts', '1 hour'$mode)" \
			-c "SET archive_cluster.run_max_wal_rate = 0" \
			-c "SELECT status, rows_moved, batches FROM archive_cluster_run('t', force => true)" >"$raw/run_$db.txt"
		run_s=$(secs_since "$t0")
		if [ "$compact_current" = 1 ]; then
			# (VACUUM of an inheritance parent, t in table mode, leaves its child alone)
			if [ "$db" = view ]; then q "$db" -c "VACUUM FULL t_current"; else q "$db" -c "VACUUM FULL t"; fi
		fi
	fi
	q "$db" -c "VACUUM ANALYZE $(vac_rels "$db")"
	local cur arc=0 size pages
	cur=$(q "$db" -c "SELECT count(*) FROM $(cur_rel "$db")")
	pages=$(q "$db" -c "SELECT pg_relation_size('$( [ "$db" = view ] && echo t_current || echo t )') / 8192")
	[ "$db" = plain ] || arc=$(q "$db" -c "SELECT count(*) FROM t_archive")
	size=$(q "$db" -c "SELECT pg_database_size(current_database())")
	echo "$db,$rows,$cur,$pages,$arc,$size,$fill_s,$run_s" > "$raw/setup_$db.csv"
	log "   $db: filled and indexed in $fill_s s${run_s:+, registered and archived in $run_s s ($(tail -1 "$raw/run_$db.txt" | tr '|' ' '))}; current tier $cur rows on $pages pages, archive $arc; $(numfmt --to=iec "$size")"
}

log "== building plain, view, tab ($rows rows each, side by side)"
for db in "${dbs[@]}"; do
	psql -d postgres -c "CREATE DATABASE $db"
done
pids=()
for db in "${dbs[@]}"; do
	build_db "$db" & pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p"
done
{ echo "db,rows,current_rows,current_pages,archive_rows,db_bytes,fill_s,archive_run_s"; cat "$raw"/setup_{plain,view,tab}.csv; } > "$out/setup.csv"
psql -d postgres -c "CHECKPOINT"

# the ids of (a): the newest seeded row (current tier) and one in the middle
# (archived in view and tab), checked
k_recent=$rows
k_archived=$((rows / 2))
for db in view tab; do
	[ "$(q "$db" -c "SELECT count(*) FROM $(cur_rel "$db") WHERE id = $k_recent")" = 1 ] \
		|| { echo "oltp_protocols.sh: id $k_recent is not in $db's current tier" >&2; exit 1; }
	[ "$(q "$db" -c "SELECT count(*) FROM t_archive WHERE id = $k_archived")" = 1 ] \
		|| { echo "oltp_protocols.sh: id $k_archived is not in $db's archive" >&2; exit 1; }
done

# --------------------------------------------------------------------------
# (a) planning time, one psql session per database and round
# --------------------------------------------------------------------------
plan_sql="$work/plans.sql"
{
	local_loops=$((plans + 5))
	for i in $(seq 1 "$local_loops"); do
		ph=custom; [ "$i" -le 5 ] && ph=warm
		for k in recent archived; do
			[ "$k" = recent ] && id=$k_recent || id=$k_archived
			echo "\\echo @ $ph select $k"
			echo "EXPLAIN (SUMMARY ON) SELECT * FROM t WHERE id = $id;"
			echo "\\echo @ $ph update $k"
			echo "EXPLAIN (SUMMARY ON) UPDATE t SET pad = 'x' WHERE id = $id;"
		done
	done
	echo "SET plan_cache_mode = force_generic_plan;"
	echo "PREPARE s(int) AS SELECT * FROM t WHERE id = \$1;"
	echo "PREPARE u(int) AS UPDATE t SET pad = 'x' WHERE id = \$1;"
	for i in $(seq 1 "$local_loops"); do
		ph=generic; [ "$i" -le 5 ] && ph=warm
		for k in recent archived; do
			[ "$k" = recent ] && id=$k_recent || id=$k_archived
			echo "\\echo @ $ph select $k"
			echo "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) EXECUTE s($id);"
			echo "BEGIN;"
			echo "\\echo @ $ph update $k"
			echo "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) EXECUTE u($id);"
			echo "ROLLBACK;"
		done
	done
} > "$plan_sql"
chown postgres: "$plan_sql"

echo "round,db,plan,statement,id,planning_ms,execution_ms" > "$out/plan.csv"
log "== (a) planning time: $plans plans of each statement per database and round, $rounds rounds"
for r in $(seq 1 "$rounds"); do
	for k in 0 1 2; do
		db=$(db_at "$r" "$k")
		t0=$(date +%s.%N)
		q "$db" -f "$plan_sql" > "$raw/plans_$db.$r.txt"
		# one line per statement: the Planning Time, and the Execution Time of
		# the generic ones
		awk -F'[ :]+' -v r="$r" -v db="$db" '
			/^@ / { ph = $2; st = $3; kk = $4; next }
			/^Planning Time:/ { pt = $3; if (ph == "custom") { print r "," db ",custom," st "," kk "," pt ","; } next }
			/^Execution Time:/ { if (ph == "generic") print r "," db ",generic," st "," kk "," pt "," $3; next }
		' "$raw/plans_$db.$r.txt" >> "$out/plan.csv"
		log "   round $r: $db: $(secs_since "$t0") s; median planning (custom plans): select $(awk -F, -v r="$r" -v db="$db" '$1 == r && $2 == db && $3 == "custom" && $4 == "select" { print $6 }' "$out/plan.csv" | median) ms, update $(awk -F, -v r="$r" -v db="$db" '$1 == r && $2 == db && $3 == "custom" && $4 == "update" { print $6 }' "$out/plan.csv" | median) ms"
	done
done
n=$(awk -F, 'NR > 1' "$out/plan.csv" | wc -l)
[ "$n" -eq $((rounds * 3 * plans * 8)) ] \
	|| { echo "oltp_protocols.sh: expected $((rounds * 3 * plans * 8)) timings in plan.csv, got $n" >&2; exit 1; }

# --------------------------------------------------------------------------
# (b) OLTP: insert, update, select one 1:1:1, both protocols, both key forms
# --------------------------------------------------------------------------
case "$keys" in both) key_forms="initplan literal" ;; *) key_forms=$keys ;; esac
combos=()
for proto in simple prepared; do
	for kf in $key_forms; do
		combos+=("$proto:$kf")
	done
done
echo "round,protocol,keys,db,tps,latency_avg_ms,transactions,failed,retried" > "$out/oltp.csv"
log "== (b) OLTP (insert, update, select one 1:1:1), pgbench -c 10 -j 2 -T $seconds, -M simple and -M prepared, keys: $key_forms, $rounds rounds"
for r in $(seq 1 "$rounds"); do
	# odd rounds in the order of combos, even rounds reversed
	order=("${combos[@]}")
	if [ $((r % 2)) -eq 0 ]; then
		order=()
		for ((i = ${#combos[@]} - 1; i >= 0; i--)); do order+=("${combos[$i]}"); done
	fi
	for combo in "${order[@]}"; do
		proto=${combo%%:*}
		kf=${combo#*:}
		# the key form's update and select one (the insert is the same)
		sfx=""
		if [ "$kf" = literal ]; then sfx=_literal; fi
		scripts=(-f "$work/lib/insert.pgbench@1" -f "$work/lib/update$sfx.pgbench@1" -f "$work/lib/select_one$sfx.pgbench@1")
		for k in 0 1 2; do
			db=$(db_at "$r" "$k")
			f="$raw/pgbench_${proto}_${kf}_$db.$r.out"
			q "$db" -c "CHECKPOINT"
			as_pg "$bindir/pgbench" -h "$work" -p "$throwaway_port" -n -M "$proto" --max-tries=10 -c 10 -j 2 \
				-T "$seconds" "${scripts[@]}" "$db" > "$f" 2>&1 || { cat "$f"; exit 1; }
			tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$f" | head -1)
			lat=$(sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' "$f" | head -1)
			ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$f" | head -1)
			fail=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$f" | head -1)
			retr=$(sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p' "$f" | head -1)
			[ -n "$tps" ] || { cat "$f"; echo "oltp_protocols.sh: no tps in $f" >&2; exit 1; }
			echo "$r,$proto,$kf,$db,$tps,$lat,$ntx,${fail:-0},${retr:-0}" >> "$out/oltp.csv"
			log "   round $r: -M $proto, $kf keys: $db: $tps tps (failed ${fail:-0}, retried ${retr:-0})"
			# the round's dead rows vacuumed now, not by autovacuum during the
			# next database's run
			q "$db" -c "VACUUM"
		done
	done
done

# --------------------------------------------------------------------------
# (c) COPY FROM: the same new rows into the three, a new file each round
# --------------------------------------------------------------------------
echo "round,db,seconds,cpu_s" > "$out/copy.csv"
log "== (c) COPY FROM: $copy_rows rows into each, $rounds rounds"
for r in $(seq 1 "$rounds"); do
	cf="$work/copy_$r.csv"
	q plain <<SQL >/dev/null
SELECT setseed(0.25);
COPY (SELECT clock_timestamp()::timestamp, 1000000000 + $(( (r - 1) * copy_rows )) + i,
			 floor(random() * 10000)::int, repeat('*', floor(random() * 201)::int)
	  FROM generate_series(1, $copy_rows) i) TO '$cf' (FORMAT csv);
SQL
	for k in 0 1 2; do
		db=$(db_at "$r" "$k")
		q "$db" -c "CHECKPOINT"
		t=$(q "$db" <<SQL
CREATE TEMP VIEW cpu AS SELECT (split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint) / $(getconf CLK_TCK).0 AS s
	FROM pg_read_file('/proc/self/stat') s;
SELECT s AS c0, clock_timestamp() AS t0 FROM cpu \gset
COPY t FROM '$cf' (FORMAT csv);
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3) || ',' || round(s - :c0, 2) FROM cpu;
SQL
)
		echo "$r,$db,$t" >> "$out/copy.csv"
		log "   round $r: COPY $copy_rows rows into $db: ${t%,*} s (backend CPU ${t#*,} s)"
		q "$db" -c "VACUUM (ANALYZE) $(vac_rels "$db")"
	done
	rm -f "$cf"
done

# --------------------------------------------------------------------------
# the summary
# --------------------------------------------------------------------------
echo "duration_s,$(( $(date +%s) - t_start ))" >> "$out/meta.csv"
"$PY" - "$out" <<'PY'
import csv, os, sys

out = sys.argv[1]
def rows(name):
    with open(os.path.join(out, name)) as f:
        return list(csv.DictReader(f))
meta = {r["key"]: r["value"] for r in rows("meta.csv")}
setup = {r["db"]: r for r in rows("setup.csv")}
plan = rows("plan.csv")
oltp = rows("oltp.csv")
copy = rows("copy.csv")
DBS = ["plain", "view", "tab"]
NAME = {"plain": "plain", "view": "view mode", "tab": "table mode"}

def pct(v, p):
    v = sorted(v)
    if not v:
        return float("nan")
    x = p * (len(v) - 1)
    i = int(x)
    return v[i] if i + 1 >= len(v) else v[i] + (v[i + 1] - v[i]) * (x - i)
def med(v):
    return pct(v, 0.5)
def f(x, d=3):
    return f"{x:,.{d}f}"

L = []
L.append("# OLTP by id with both protocols, planning time, COPY: plain table, view mode, table mode")
L.append("")
L.append(f"`{meta['command']}` ({meta['date']}, {int(meta['duration_s']) // 60} min {int(meta['duration_s']) % 60} s; "
         f"code `{meta['git']}`; {meta['postgres']}; {meta['cores']} cores, {meta['cpu']}; shared_buffers "
         f"{meta['shared_buffers']}). One server, three databases built alike; the order of the three rotated each "
         f"round ({meta['rounds']} rounds).")
L.append("")
L.append("The current tier as the one run left it: its heap still has the pages of all the rows it held (the planner may "
         "then choose a bitmap scan for a look-up by id in it, which table mode's tier look-up does not take; "
         "`--compact-current` rewrites it)." if meta["compact_current"] == "0"
         else "The current tier rewritten after the run (`--compact-current`: VACUUM FULL), its heap the size of its rows.")
L.append("")
L.append("| database | rows | current tier: rows | its heap pages | archive | database size | filled and indexed | registered and archived |")
L.append("|---|---|---|---|---|---|---|---|")
for d in DBS:
    s = setup[d]
    L.append(f"| {d} | {int(s['rows']):,} | {int(s['current_rows']):,} | {int(s['current_pages']):,} | {int(s['archive_rows']):,} | "
             f"{int(s['db_bytes']) / 2**20:,.0f} MB | {s['fill_s']} s | {(s['archive_run_s'] + ' s') if s['archive_run_s'] else '-'} |")
L.append("")

def plan_table(kind, col, title, note):
    L.append(f"## {title}")
    L.append("")
    L.append(note)
    L.append("")
    L.append("| statement | id | plain median / p90 / mean (ms) | view median / p90 / mean (ms) | view / plain (median; mean) "
             "| table median / p90 / mean (ms) | table / plain (median; mean) |")
    L.append("|---|---|---|---|---|---|---|")
    for st in ("select", "update"):
        for k in ("recent", "archived"):
            m = {}
            a = {}
            cells = []
            for d in DBS:
                v = [float(r[col]) for r in plan if r["plan"] == kind and r["statement"] == st and r["id"] == k and r["db"] == d]
                m[d] = med(v)
                a[d] = sum(v) / len(v)
                cells.append(f"{f(m[d])} / {f(pct(v, 0.9))} / {f(a[d], 4)}")
            L.append(f"| {st} | {k} | {cells[0]} | {cells[1]} | **{m['view'] / m['plain']:.2f}x**; {a['view'] / a['plain']:.2f}x "
                     f"| {cells[2]} | **{m['tab'] / m['plain']:.2f}x**; {a['tab'] / a['plain']:.2f}x |")
    L.append("")
    L.append("EXPLAIN rounds these times to the microsecond (0.001 ms): where they are a few microseconds, the medians are "
             "coarse and the ratio of the means (of the rounded values) is the finer one.")
    L.append("")

n = int(meta["plans"]) * int(meta["rounds"])
plan_table("custom", "planning_ms", "(a) Planning time, custom plans",
           f"`EXPLAIN (SUMMARY ON) SELECT * FROM t WHERE id = k` and `EXPLAIN (SUMMARY ON) UPDATE t SET pad = 'x' WHERE "
           f"id = k` (planned, not executed): \"Planning Time\", {n} samples per statement and database ({meta['plans']} "
           f"per round, one psql session per database and round, after 5 warm-up loops). k recent: the newest seeded "
           f"id (current tier); archived: the middle id (in `t_archive` in view and table mode). Ratio: median over "
           f"plain's median, and mean over mean (above 1: slower).")
plan_table("generic", "execution_ms", "(a) Generic plans: execution time",
           f"`SET plan_cache_mode = force_generic_plan`, `PREPARE`, then `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) "
           f"EXECUTE s(k)` (the UPDATE inside BEGIN/ROLLBACK): a cached generic plan reports a planning time of ~0, so "
           f"this is \"Execution Time\", which includes executor start (where run-time pruning happens) and the "
           f"statement's execution (the index probes; the UPDATE's trigger in view mode). {n} samples each; ratios as above.")

L.append("## (b) OLTP: insert, update, select one (1:1:1), both protocols, "
         + {"initplan": "InitPlan keys", "literal": "constant keys"}.get(meta.get("keys", "both"), "both key forms"))
L.append("")
L.append(f"`pgbench -c 10 -j 2 -T {meta['seconds']}`, insert, update and select one 1:1:1 (target 3; update and "
         f"select one pick ids among the last 3,600, the current tier), with two key forms: InitPlan key, "
         f"bench/lib/insert.pgbench, update.pgbench, select_one.pgbench, whose id is "
         f"`(SELECT last_value FROM t_id_seq) - :off`, an InitPlan, not a constant; constant key, insert.pgbench, "
         f"update_literal.pgbench, select_one_literal.pgbench, which first fetch that id "
         f"(`SELECT last_value - :off AS id FROM t_id_seq \\gset`, as the application knows it) and then send it "
         f"as a constant (`WHERE id = :id`), as Django does (two statements per update and select one: their tps "
         f"is not comparable across key forms, only across databases). Each with `-M simple` and `-M prepared`, "
         f"the order of the (protocol, keys) runs reversed every other round; a CHECKPOINT before and a VACUUM "
         f"after each run. tps per round; ratio: median over plain's median, and per round (same round).")
L.append("")
L.append("| protocol, keys | plain tps | view tps | view / plain (median; per round) | table tps | table / plain (median; per round) |")
L.append("|---|---|---|---|---|---|")
R = sorted({int(r["round"]) for r in oltp})
KEYS = {"initplan": "InitPlan key", "literal": "constant key"}
for proto in ("simple", "prepared"):
    for keys in ("initplan", "literal"):
        sel = [r for r in oltp if r["protocol"] == proto and r["keys"] == keys]
        if not sel:
            continue
        t = {d: {int(r["round"]): float(r["tps"]) for r in sel if r["db"] == d} for d in DBS}
        m = {d: med(list(t[d].values())) for d in DBS}
        def cell(d):
            return " / ".join(f"{t[d][i]:,.0f}" for i in R) + f" (median {m[d]:,.0f})"
        def ratio(d):
            per = ", ".join(f"{t[d][i] / t['plain'][i]:.2f}" for i in R)
            return f"**{m[d] / m['plain']:.2f}x**; {per}"
        L.append(f"| `-M {proto}`, {KEYS[keys]} | {cell('plain')} | {cell('view')} | {ratio('view')} | {cell('tab')} | {ratio('tab')} |")
fails = sum(int(r["failed"]) for r in oltp)
retr = sum(int(r["retried"]) for r in oltp)
L.append("")
L.append(f"Failed transactions: {fails}; retried (40001): {retr}. Targets (DESIGN.md, at 11M rows): table mode >= 0.95x "
         f"simple, >= 0.98x prepared; view mode >= 0.85x and >= 0.9x.")
L.append("")

L.append("## (c) COPY FROM")
L.append("")
L.append(f"`COPY t FROM` a CSV of {int(meta['copy_rows']):,} new rows (new ids, ts now: the current tier), the same "
         f"file into the three in a round, a new file each round; a CHECKPOINT before and `VACUUM (ANALYZE)` after "
         f"each. Ratio: throughput (plain's median time over the mode's; below 1: slower).")
L.append("")
L.append("| database | seconds per round | median | rows/s | against plain | backend CPU s (median) |")
L.append("|---|---|---|---|---|---|")
cm = {}
for d in DBS:
    v = {int(r["round"]): float(r["seconds"]) for r in copy if r["db"] == d}
    cm[d] = med(list(v.values()))
for d in DBS:
    v = {int(r["round"]): float(r["seconds"]) for r in copy if r["db"] == d}
    cpu = med([float(r["cpu_s"]) for r in copy if r["db"] == d])
    L.append(f"| {d} | {' / '.join(f'{v[i]:.3f}' for i in sorted(v))} | {cm[d]:.3f} | "
             f"{int(meta['copy_rows']) / cm[d]:,.0f} | **{cm['plain'] / cm[d]:.2f}x** | {cpu:.2f} |")
L.append("")
L.append("Targets (DESIGN.md, at 11M rows): table mode >= 0.98x, view mode >= 0.8x.")
L.append("")
L.append(f"Raw data: {out}/ (meta.csv, setup.csv, plan.csv, oltp.csv, copy.csv; raw/ holds pgbench's and psql's output).")
text = "\n".join(L) + "\n"
with open(os.path.join(out, "summary.md"), "w") as fh:
    fh.write(text)
PY
log "== done in $(( $(date +%s) - t_start )) s; results in $out"
cat "$out/summary.md" >&3
