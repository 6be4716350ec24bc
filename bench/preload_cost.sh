#!/usr/bin/env bash
# What archive_cluster costs the statements of a table it does not manage
# (issue 41): every bench of bench/ compares a registered table with a plain
# table in the same server, where the library is loaded too (its planner,
# executor and commit hooks run for every statement of every table).  This
# compares the plain table with and without the library, side by side in one
# run: a throw-away PostgreSQL 15 server as the postgres OS user, one database
# with the seed's table t(ts, id, cid, pad) (--rows rows, 10,000 customers,
# primary key (id), index (cid, ts)), filled as bench/oltp_protocols.sh fills
# it; then --rounds rounds, each restarting the server twice:
#   on   shared_preload_libraries = 'archive_cluster', the extension created
#        in the database (archive_cluster.enabled = off: no worker), t not
#        registered;
#   off  shared_preload_libraries = '' (the library never loaded);
# in the order on, off in odd rounds and off, on in even ones; under each,
# pgbench -c 10 -j 2 -T --seconds with insert, update and select one by id
# 1:1:1 (target 3; the id fetched first and sent as a constant, as Django
# does), -M simple then -M prepared (reversed in even rounds); a CHECKPOINT
# before each, and after each the rows it inserted deleted, the sequence set
# back and a VACUUM, so that each finds the table as the first did.  tps per
# round, medians, ratio on / off.
# Prints a Markdown summary to stdout (progress to stderr) and writes it
# (summary.md) with raw CSVs and pgbench outputs into --out.  As root.
#
#   sudo bench/preload_cost.sh [--rows 1100000] [--seconds 15] [--rounds 4] [--out DIR]
set -euo pipefail

rows=1100000
seconds=15
rounds=4
out=""
args="$*"
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=$2; shift 2 ;;
		--seconds) seconds=$2; shift 2 ;;
		--rounds) rounds=$2; shift 2 ;;
		--out) out=$2; shift 2 ;;
		-h|--help) sed -n '2,24p' "$0"; exit 0 ;;
		*) echo "preload_cost.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
for v in rows seconds rounds; do
	case "${!v}" in ''|*[!0-9]*|0) echo "preload_cost.sh: --$v takes a positive integer" >&2; exit 2 ;; esac
done
[ "$rows" -ge 10000 ] || { echo "preload_cost.sh: --rows must be at least 10000" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
	echo "preload_cost.sh: run as root (it installs packages, runs the server as postgres)" >&2
	exit 1
fi

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/preload_cost.XXXX)
else
	mkdir -p "$out"
fi
out=$(cd "$out" && pwd)
raw="$out/raw"
mkdir -p "$raw"

exec 3>&1 1>&2
log() { echo "$*"; echo "$*" >> "$out/progress.log"; }
started_at=$(date -u '+%Y-%m-%d %H:%M UTC')
t_start=$(date +%s)

. "$here/lib/throwaway.sh"
trap 'exit 130' INT TERM
port=5797
opts=(archive_cluster.enabled=off lc_messages=C shared_buffers=128MB max_wal_size=4GB checkpoint_timeout=15min)
throwaway_start preload "$port" "${opts[@]}"
mkdir -p "$work/lib"
cp "$here"/lib/insert.pgbench "$here"/lib/update_literal.pgbench "$here"/lib/select_one_literal.pgbench \
	"$here"/lib/seed_table.sql "$work/lib/"
chown -R postgres: "$work/lib"

# restart the server with the library preloaded (on) or not (off)
restart() {
	local o="-p $port -k $work" x
	for x in "${opts[@]}"; do
		o="$o -c $x"
	done
	if [ "$1" = on ]; then
		o="$o -c shared_preload_libraries=archive_cluster"
	else
		o="$o -c shared_preload_libraries="
	fi
	as_pg "$bindir/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
	as_pg "$bindir/pg_ctl" -D "$pgdata" -w -l "$work/log" -o "$o" start >/dev/null
	[ "$(psql -d bench -At -c "SHOW shared_preload_libraries")" = "$([ "$1" = on ] && echo archive_cluster)" ] \
		|| { echo "preload_cost.sh: the server did not restart as asked ($1)" >&2; exit 1; }
}
median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

{
	echo "key,value"
	echo "date,$started_at"
	echo "command,bench/preload_cost.sh${args:+ $args}"
	echo "rows,$rows"
	echo "seconds,$seconds"
	echo "rounds,$rounds"
	echo "cpu,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//;s/,/ /g')"
	echo "cores,$(nproc)"
	echo "postgres,$("$bindir/postgres" --version)"
	echo "git,$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo none)$(git -C "$top" diff --quiet 2>/dev/null || echo ' (dirty tree)')"
} > "$out/meta.csv"

log "== preload_cost: $rows rows, out $out, port $port"
psql -d postgres -c "CREATE DATABASE bench"
psql -d bench -c "CREATE EXTENSION archive_cluster" >/dev/null
psql -d bench -v rows="$rows" -f "$work/lib/seed_table.sql" >/dev/null
psql -d bench -c "VACUUM ANALYZE t"
[ "$(psql -d bench -At -c "SELECT count(*) FROM archive_cluster_tables")" = 0 ] \
	|| { echo "preload_cost.sh: t must not be registered" >&2; exit 1; }

echo "round,library,protocol,tps,latency_avg_ms,transactions,failed" > "$out/oltp.csv"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then libs="on off"; protos="simple prepared"; else libs="off on"; protos="prepared simple"; fi
	for lib in $libs; do
		restart "$lib"
		for proto in $protos; do
			psql -d bench -c "CHECKPOINT"
			f="$raw/r${r}_${lib}_${proto}.txt"
			as_pg "$bindir/pgbench" -h "$work" -p "$port" -n -c 10 -j 2 -T "$seconds" -M "$proto" \
				-f "$work/lib/insert.pgbench" -f "$work/lib/update_literal.pgbench" \
				-f "$work/lib/select_one_literal.pgbench" bench > "$f" 2>&1
			tps=$(awk '/^tps = / { print $3; exit }' "$f")
			lat=$(awk '/^latency average = / { print $4; exit }' "$f")
			n=$(awk '/^number of transactions actually processed: / { print $6; exit }' "$f")
			failed=$(awk '/^number of failed transactions: / { print $5; exit }' "$f")
			[ -n "$tps" ] || { echo "preload_cost.sh: pgbench failed, see $f" >&2; exit 1; }
			echo "$r,$lib,$proto,$tps,$lat,$n,${failed:-0}" >> "$out/oltp.csv"
			log "   round $r: library $lib, -M $proto: $tps tps"
			# back to the rows of the start (the inserted ones deleted, the
			# sequence set back), so that every measurement finds the same table
			psql -d bench -c "DELETE FROM t WHERE id > $rows" -c "SELECT setval('t_id_seq', $rows)" >/dev/null
			psql -d bench -c "VACUUM t"
		done
	done
done

{
	echo "# The library's cost to a table it does not manage"
	echo
	echo "\`bench/preload_cost.sh${args:+ $args}\` ($started_at, $(( $(date +%s) - t_start )) s; code $(awk -F, '$1 == "git" { print $2 }' "$out/meta.csv"); $("$bindir/postgres" --version); $(nproc) cores). One server, one database, the table not registered; the server restarted with \`shared_preload_libraries = 'archive_cluster'\` (on, the extension created in the database) and with none (off), the order alternated each round. \`pgbench -c 10 -j 2 -T $seconds\`, insert, update and select one by id 1:1:1, the id sent as a constant. tps per round; ratio: on's median over off's median, and per round."
	echo
	echo "| protocol | off tps | on tps | on / off (median; per round) |"
	echo "|---|---|---|---|"
	for proto in simple prepared; do
		offs=$(awk -F, -v p="$proto" '$2 == "off" && $3 == p { print $4 }' "$out/oltp.csv")
		ons=$(awk -F, -v p="$proto" '$2 == "on" && $3 == p { print $4 }' "$out/oltp.csv")
		moff=$(echo "$offs" | median)
		mon=$(echo "$ons" | median)
		per=$(for r in $(seq 1 "$rounds"); do
			awk -F, -v p="$proto" -v r="$r" '$1 == r && $3 == p { t[$2] = $4 } END { printf "%.2f\n", t["on"] / t["off"] }' "$out/oltp.csv"
		done | paste -sd, | sed 's/,/, /g')
		echo "| \`-M $proto\` | $(echo "$offs" | awk '{ printf "%s%s", (NR > 1 ? " / " : ""), int($1 + 0.5) }') (median $moff) | $(echo "$ons" | awk '{ printf "%s%s", (NR > 1 ? " / " : ""), int($1 + 0.5) }') (median $mon) | **$(awk -v a="$mon" -v b="$moff" 'BEGIN { printf "%.3f", a / b }')x**; $per |"
	done
	echo
	echo "Failed transactions: $(awk -F, 'NR > 1 { s += $7 } END { print s + 0 }' "$out/oltp.csv"). Raw data: $out (meta.csv, oltp.csv; raw/ holds pgbench's output)."
} > "$out/summary.md"
cat "$out/summary.md" >&3
