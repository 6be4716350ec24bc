#!/usr/bin/env bash
# Pacing by effect (issue 42): what a run and a compaction do to concurrent
# commits, under archive_cluster.pacing = 'effect' (the default) beside the
# fixed rates of release 1.0 ('rate' at 20 MB/s, the default ceiling, and at
# 5 MB/s), side by side on one throw-away PostgreSQL 15 server.
#
# The seed's table t(ts, id, cid, pad) with --rows rows, registered in view
# mode and archived.  Then, for each round (--rounds, the settings' order
# rotated from one round to the next) and each setting:
#   run         ~550,000 due rows are added to t_current; inserts (4 clients
#               at 500 tps in all, the seed's insert, as bench.sh's target
#               5) run 15 s alone, then during a forced run under the
#               setting: their p99 during the run against without;
#   compaction  the same around a forced compaction of the loose pages that
#               the run (the previous step) left, under the setting.
# Last, a run and a compaction under each setting with nobody else writing:
# their durations (pacing by effect must not make them slower than 20 MB/s).
#
# Then a streaming standby (pg_basebackup -R on this machine, its processes
# held to --standby-cpu percent of one CPU, default 20, so that it replays
# slower than the primary writes) while runs go on back to back among the
# inserts (--standby-runs each way, 0: none): its replay lag every 100 ms,
# with archive_cluster.max_replica_lag at its default and off, plotted
# (standby_lag.png).
#
#   sudo bench/pacing.sh [--rows N] [--rounds R] [--tail N] [--secs S] [--standby-runs N] [--standby-cpu PCT]
#                        [--out DIR] [--port P] [--only KIND:SETTING,...] [--server NAME=VALUE]...
#
# --only (e.g. compaction:effect,compaction:rate5) measures those pairs only
# and skips the jobs alone (a diagnosis, not a verdict).
#
# Results: DIR/pacing.csv (one row per measurement), DIR/waits_*.csv (what
# the inserting sessions waited for during each job, 50-ms samples), DIR/alone.csv,
# DIR/summary.md; the run log rows (archive_cluster_runs: paced, detail);
# DIR/io_*.csv: the disk (/proc/diskstats of the data directory's device), the
# CPUs' jiffies (/proc/stat: busy, idle, iowait, steal) and the kernel's dirty
# and writeback page cache (/proc/meminfo) every 100 ms from
# the base window to the job's end, with pg_stat_wal's counters around each
# window (walstats.csv; track_wal_io_timing is on); raw/jobs.csv: each job's
# start and end (epoch seconds); server.log: the server's log (checkpoints,
# autovacuum, temp files).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rows=2000000
rounds=4
tail_rows=550000
secs=15
rate=500
clients=4
out=""
port=5580
standby_runs=4
standby_cpu=20
only=""
server_opts=()
refs=yes
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=$2; shift 2 ;;
		--rounds) rounds=$2; shift 2 ;;
		--tail) tail_rows=$2; shift 2 ;;
		--secs) secs=$2; shift 2 ;;
		--out) out=$2; shift 2 ;;
		--port) port=$2; shift 2 ;;
		--standby-runs) standby_runs=$2; shift 2 ;;
		--standby-cpu) standby_cpu=$2; shift 2 ;;
		--only) only=$2; shift 2 ;;
		--server) server_opts+=("$2"); shift 2 ;;
		--no-references) refs=no; shift ;;
		-h|--help) sed -n '2,32p' "$0"; exit 0 ;;
		*) echo "pacing.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || out=$(mktemp -d /tmp/archive_cluster_pacing.XXXXXX)
mkdir -p "$out/raw"
chown -R postgres: "$out"
PY=/usr/bin/python3
if [ ! -x /usr/lib/postgresql/15/bin/pg_repack ]; then
	echo "== installing postgresql-15-repack"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15-repack </dev/null \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15-repack </dev/null; }
fi
if ! $PY -c 'import matplotlib' 2>/dev/null; then
	echo "== installing python3-matplotlib"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-matplotlib </dev/null \
		|| { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-matplotlib </dev/null; }
fi

# shellcheck source=lib/throwaway.sh
. "$here/lib/throwaway.sh"
throwaway_start pacing "$port" max_connections=40 shared_buffers=128MB \
	maintenance_work_mem=128MB checkpoint_timeout=15min max_wal_size=4GB log_checkpoints=on \
	log_autovacuum_min_duration=0 log_temp_files=0 track_wal_io_timing=on archive_cluster.enabled=off \
	${server_opts[@]+"${server_opts[@]}"}
q() { psql -At "$@"; }
standby_pid=""
stop_standby() {
	if [ -n "$standby_pid" ] && kill -0 "$standby_pid" 2>/dev/null; then
		as_pg "$bindir/pg_ctl" -D "$sdata" -m fast -w stop >/dev/null || kill "$standby_pid" || true
	fi
	standby_pid=""
}
trap 'stop_standby; cp "$work/log" "$out/server.log" 2>/dev/null || true; throwaway_cleanup' EXIT
echo "== server: port $port, data in $work; results in $out"
echo "   machine: $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GB; commit $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')"

# the seed's table, loaded, registered and archived (alone: not paced)
t_load=$(date +%s)
q <<SQL >/dev/null
CREATE EXTENSION archive_cluster;
CREATE SEQUENCE t_id_seq;
CREATE TABLE t (ts timestamp NOT NULL, id int NOT NULL PRIMARY KEY, cid int NOT NULL, pad varchar(200) NOT NULL);
INSERT INTO t SELECT now() - interval '2 days' + g * interval '10 ms', nextval('t_id_seq'),
	floor(random() * 10000)::int, repeat('*', floor(random() * 201)::int) FROM generate_series(1, $rows) g;
CREATE INDEX t_cid_ts ON t (cid, ts);
SELECT archive_cluster_register('t', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 minute');
SET archive_cluster.pacing = off;
SELECT count(*) FROM archive_cluster_run('t', force => true);
VACUUM ANALYZE t_current, t_archive;
-- compacted once, so that each compaction measured takes the loose pages of one run
SELECT count(*) FROM archive_cluster_compact('t', force => true);
VACUUM t_archive;
SQL
echo "   $rows rows loaded and archived in $(( $(date +%s) - t_load )) s"
# what the inserting sessions wait for during a job (bench_sample_waits)
q -f "$here/lib/common.sql" >/dev/null

# before each window: no dead rows left by the previous job for autovacuum to
# clean during the next one (a VACUUM of the archive is measured on its own,
# as a reference), the dirty pages on disk
# then a second in which nobody writes (the jobs alone of 2026-11-27 were
# measured so; since, a write that ended before a job began is not another
# writer for it)
settle() { q -c "VACUUM t_current, t_archive" -c "CHECKPOINT" >/dev/null; sync; sleep 1; }

# due rows for one run, written into t_current directly (as the view would)
add_tail() {
	q -c "INSERT INTO t_current SELECT now() - interval '1 hour' + g * interval '1 ms', nextval('t_id_seq'),
		floor(random() * 10000)::int, repeat('*', floor(random() * 201)::int) FROM generate_series(1, $tail_rows) g" \
		-c "VACUUM ANALYZE t_current" >/dev/null
}

# the job's statement under SETTING (a=b,c=d)
job_sql() {	# job_sql KIND SETTING
	local sql kv
	if [ "$1" = run ]; then
		sql="SELECT rows_moved FROM archive_cluster_run('t', force => true)"
	elif [ "$1" = vacuum ]; then
		echo "VACUUM t_archive"
		return
	elif [ "$1" = repack ]; then
		echo "pg_repack"
		return
	else
		sql="SELECT rows_rewritten FROM archive_cluster_compact('t', force => true)"
	fi
	for kv in $(echo "$2" | tr ',' ' '); do
		sql="SET ${kv%%=*} = '${kv#*=}'; $sql"
	done
	echo "$sql"
}

# the last run-log row: seconds, paced seconds, detail
last_log() {
	q -F '|' -c "SELECT round(extract(epoch FROM duration)::numeric, 2), round(extract(epoch FROM paced)::numeric, 2),
		coalesce(detail, '') FROM archive_cluster_runs ORDER BY run_id DESC LIMIT 1"
}

pgb() {	# pgb PREFIX SECONDS: the inserting clients
	(cd "$out/raw" && as_pg "$bindir/pgbench" -h "$work" -p "$port" -n -M prepared --max-tries=10 -c "$clients" -j 2 \
		-T "$2" -R "$rate" --log --log-prefix="$1" -f "$here/lib/insert.pgbench" postgres > "$out/raw/$1.out" 2>&1)
}

# the block device under the data directory, for /proc/diskstats
dev=$(basename "$(df --output=source "$work" | tail -1)")
stamp() {	# each line of stdin after the time it came (epoch seconds)
	local l
	while IFS= read -r l; do
		printf '%s %s\n' "$(date +%s.%N)" "$l"
	done
}
iosample() {	# iosample LABEL: every 100 ms until killed
	local f="$out/raw/io_$1.csv"
	echo "t,dirty_kb,writeback_kb,writes,sectors_written,write_ms,in_flight,io_ms,cpu_busy,cpu_idle,cpu_iowait,cpu_steal" > "$f"
	while :; do
		echo "$(date +%s.%N),$(awk '/^Dirty:/ {d=$2} /^Writeback:/ {w=$2} END {print d "," w}' /proc/meminfo),$(awk -v d="$dev" '$3 == d {print $8 "," $10 "," $11 "," $12 "," $13}' /proc/diskstats),$(awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 "," $5 "," $6 "," $9}' /proc/stat)" >> "$f"
		sleep 0.1
	done
}
echo "label,window,wal_records,wal_fpi,wal_bytes,wal_write,wal_sync,wal_write_ms,wal_sync_ms" > "$out/walstats.csv"
walstats() {	# walstats LABEL WINDOW
	echo "$1,$2,$(q -F , -c "SELECT wal_records, wal_fpi, wal_bytes, wal_write, wal_sync, wal_write_time, wal_sync_time FROM pg_stat_wal")" >> "$out/walstats.csv"
}

echo "round,kind,setting,p99_without_ms,p99_during_ms,ratio,inserts_during,job_s,paced_s,rows,detail" > "$out/pacing.csv"
measure() {	# measure ROUND KIND NAME SETTING
	local r=$1 kind=$2 name=$3 setting=$4 label="${2}_${3}_r$1" p t0 t1 moved log
	if [ "$kind" = run ]; then
		add_tail
	elif [ "$kind" = vacuum ] || [ "$kind" = repack ]; then
		# references: the dead rows of an unpaced compaction are vacuumed,
		# or the archive rewritten by pg_repack -o cid,ts, among the inserts
		add_tail
		q -c "SET archive_cluster.pacing = off" -c "SELECT rows_moved FROM archive_cluster_run('t', force => true)" \
			-c "SELECT rows_rewritten FROM archive_cluster_compact('t', force => true)" >/dev/null
	else
		# loose pages to compact: the newest run's (alone, not paced)
		add_tail
		q -c "SET archive_cluster.pacing = off" -c "SELECT rows_moved FROM archive_cluster_run('t', force => true)" >/dev/null
		q -c "VACUUM t_current, t_archive" >/dev/null
	fi
	if [ "$kind" = vacuum ]; then
		q -c "CHECKPOINT" >/dev/null
		sync
	else
		settle
	fi
	iosample "$label" &
	local ios=$!
	walstats "$label" base_start
	pgb "p99_base_$label" "$secs"
	walstats "$label" base_end
	if [ "$kind" = vacuum ]; then
		q -c "CHECKPOINT" >/dev/null
		sync
	else
		settle
	fi
	# the inserts go on past the job: pgbench is stopped 3 s after it (its
	# per-transaction log loses at most its last buffered lines, after the job;
	# SIGINT would only cancel its query)
	pgb "p99_run_$label" 900 &
	p=$!
	sleep 3
	q -c "TRUNCATE bench_waits" >/dev/null
	q -c "CALL bench_sample_waits(3600)" >/dev/null 2>&1 &
	local sampler=$!
	walstats "$label" job_start
	t0=$(date +%s.%N)
	# the pacer's steps and the job's phases (DEBUG1), each line after its time, into raw/LABEL.pacer
	if [ "$kind" = repack ]; then
		as_pg "$bindir/pg_repack" -h "$work" -p "$port" -d postgres -t t_archive -o cid,ts > "$out/raw/$label.pacer" 2>&1
		moved=$(q -c "SELECT count(*) FROM t_archive")
	elif [ "$kind" = vacuum ]; then
		q -c "VACUUM t_archive" 2> "$out/raw/$label.pacer"
		moved=$(q -c "SELECT n_tup_del FROM pg_stat_user_tables WHERE relname = 't_archive'")
	else
		moved=$(q -c "SET client_min_messages = debug1; $(job_sql "$kind" "$setting")" 2> >(stamp > "$out/raw/$label.pacer") | tail -1)
	fi
	t1=$(date +%s.%N)
	walstats "$label" job_end
	kill "$ios" 2>/dev/null || true
	echo "$label,$t0,$t1" >> "$out/raw/jobs.csv"
	# the sampler ends with the job it sees; stopped here whatever it saw
	q -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE query LIKE 'CALL bench_sample_waits%' AND pid <> pg_backend_pid()" >/dev/null
	wait "$sampler" 2>/dev/null || true
	{ echo "wait_event,samples"; q -F , -c "SELECT wait, count(*) FROM bench_waits GROUP BY 1 ORDER BY 2 DESC"; } \
		> "$out/waits_$label.csv"
	sleep 3
	pkill -TERM -f "log-prefix=p99_run_$label" || true
	wait "$p" || true
	log=$(last_log)
	if [ "$kind" = vacuum ] || [ "$kind" = repack ]; then
		log="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')|0|"
	fi
	$PY "$here/lib/report.py" p99window "$out/raw" "$label" "$t0" "$t1" "$moved" "$rows" \
		| sed -n 's/^p99_inserts,[^,]*,[^,]*,\([a-z_0-9]*\),\([^,]*\),.*/\1=\2/p' > "$out/raw/$label.p99"
	# shellcheck disable=SC1090
	. <(sed 's/^/w_/' "$out/raw/$label.p99")
	echo "$r,$kind,$name,$w_p99_without_run_ms,$w_p99_during_run_ms,$w_p99_ratio,$w_inserts_during_run,${log%%|*},$(echo "$log" | cut -d'|' -f2),$moved,\"$(echo "$log" | cut -d'|' -f3-)\"" \
		| tee -a "$out/pacing.csv"
}

settings=("effect=archive_cluster.pacing=effect"
	"rate20=archive_cluster.pacing=rate"
	"rate5=archive_cluster.pacing=rate,archive_cluster.run_max_wal_rate=5,archive_cluster.compaction_max_wal_rate=5")
# unpaced jobs, for a diagnosis only (--only run:off,compaction:off)
[[ ",$only," != *":off,"* ]] || settings+=("off=archive_cluster.pacing=off")
n=${#settings[@]}
for r in $(seq 1 "$rounds"); do
	echo "== round $r"
	for i in $(seq 0 $((n - 1))); do
		s=${settings[$(( (i + r - 1) % n ))]}
		for kind in run compaction; do
			if [ -z "$only" ] || [[ ",$only," == *",$kind:${s%%=*},"* ]]; then
				measure "$r" "$kind" "${s%%=*}" "${s#*=}"
			fi
		done
	done
done

# Two passes, the second in the reverse order: the first run after the
# rounds writes into the pages the last compaction freed (slower than new
# pages), whichever setting comes first.
echo "== alone: a run and a compaction under each setting, nobody else writing (two passes)"
echo "pass,kind,setting,seconds,paced_s,rows" > "$out/alone.csv"
[ -z "$only" ] || settings=()
alone_order=("${settings[@]}")
for pass in 1 2; do
	for s in "${alone_order[@]}"; do
		add_tail
		settle
		q -c "$(job_sql run "${s#*=}")" >/dev/null
		log=$(last_log)
		echo "$pass,run,${s%%=*},${log%%|*},$(echo "$log" | cut -d'|' -f2),$tail_rows" | tee -a "$out/alone.csv"
		q -c "VACUUM t_current, t_archive" >/dev/null
		settle
		q -c "$(job_sql compaction "${s#*=}")" >/dev/null
		log=$(last_log)
		echo "$pass,compaction,${s%%=*},${log%%|*},$(echo "$log" | cut -d'|' -f2)," | tee -a "$out/alone.csv"
	done
	reversed=()
	for ((i = ${#alone_order[@]} - 1; i >= 0; i--)); do reversed+=("${alone_order[$i]}"); done
	alone_order=("${reversed[@]+"${reversed[@]}"}")
done

if [ "$refs" = yes ]; then
	echo "== references: a VACUUM of the archive after a compaction, pg_repack -o cid,ts of the archive"
	for r in $(seq 1 "$rounds"); do
		measure "$r" vacuum plain ""
	done
	# last of the measurements among inserts: the archive's pages are new
	q -c "CREATE EXTENSION IF NOT EXISTS pg_repack" >/dev/null
	measure 1 repack plain ""
fi

# A streaming standby (pg_basebackup -R, on this machine) while runs go on
# back to back among inserts: its replay lag, sampled every 100 ms, with
# archive_cluster.max_replica_lag at its default and off (-1).
if [ "$standby_runs" -gt 0 ]; then
	echo "== standby: $standby_runs runs with max_replica_lag at its default, then $standby_runs with -1"
	sport=$((port + 1))
	sdata="$work/standby"
	q -c "SELECT pg_create_physical_replication_slot('bench_standby')" >/dev/null
	as_pg "$bindir/pg_basebackup" -h "$work" -p "$port" -D "$sdata" -R -S bench_standby -X stream -c fast >/dev/null
	# a standby that replays slower than the primary writes: its processes
	# get --standby-cpu percent of one CPU (cgroup v1 cpu controller)
	scg="/sys/fs/cgroup/cpu/archive_cluster_standby.$$"
	mkdir -p "$scg"
	echo 100000 > "$scg/cpu.cfs_period_us"
	echo $((standby_cpu * 1000)) > "$scg/cpu.cfs_quota_us"
	bash -c "echo \$\$ > '$scg/cgroup.procs'; exec runuser -u postgres -- '$bindir/pg_ctl' -D '$sdata' -w -l '$work/standby.log' \
		-o '-p $sport -k $work -c hot_standby=on -c wal_receiver_status_interval=1' start" >/dev/null
	standby_pid=$(head -1 "$sdata/postmaster.pid")
	echo "   standby: pid $standby_pid, port $sport, $standby_cpu% of a CPU ($scg)"
	echo "t,setting,lag_bytes,bound_bytes" > "$out/standby_lag.csv"
	for s in default off; do
		val=DEFAULT
		[ "$s" = off ] && val=-1
		q -c "ALTER SYSTEM SET archive_cluster.max_replica_lag = $val" -c "SELECT pg_reload_conf()" >/dev/null
		sleep 1
		bound=$(q -c "SELECT CASE WHEN current_setting('archive_cluster.max_replica_lag') = '-1' THEN -1
			ELSE pg_size_bytes(current_setting('archive_cluster.max_replica_lag')) END")
		pgb "standby_$s" 3600 &
		p=$!
		( while :; do
			echo "$(date +%s.%N),$s,$(q -c "SELECT coalesce(max(pg_current_wal_flush_lsn() - replay_lsn), 0) FROM pg_stat_replication"),$bound"
			sleep 0.1
		  done >> "$out/standby_lag.csv" ) &
		sampler=$!
		for i in $(seq 1 "$standby_runs"); do
			add_tail
			q -c "SELECT rows_moved FROM archive_cluster_run('t', force => true)" >/dev/null
			q -c "VACUUM t_current" >/dev/null
		done
		sleep 5
		kill "$sampler"
		pkill -TERM -f "log-prefix=standby_$s" || true
		wait "$p" || true
		echo "   $s: max lag $(awk -F, -v s="$s" '$2 == s { if ($3 > m) m = $3 } END { printf "%.0f MB", m / 1048576 }' "$out/standby_lag.csv")"
	done
	q -c "ALTER SYSTEM RESET archive_cluster.max_replica_lag" -c "SELECT pg_reload_conf()" >/dev/null
	stop_standby
	rmdir "$scg" 2>/dev/null || true
	q -c "SELECT pg_drop_replication_slot('bench_standby')" >/dev/null
fi

$PY - "$out" <<'PY'
import csv, sys, statistics
out = sys.argv[1]
rows = list(csv.DictReader(open(out + '/pacing.csv')))
alone = list(csv.DictReader(open(out + '/alone.csv')))
L = ['# Pacing by effect: p99 of concurrent inserts during a job / without', '']
L.append('| kind | setting | ratios (round by round) | met (<= 1.5x) | job seconds | paced seconds |')
L.append('|---|---|---|---|---|---|')
for kind in ('run', 'compaction', 'vacuum', 'repack'):
    for s in ('effect', 'rate20', 'rate5', 'off', 'plain'):
        m = [r for r in rows if r['kind'] == kind and r['setting'] == s]
        if not m:
            continue
        ratios = [float(r['ratio']) for r in m]
        L.append('| %s | %s | %s | %d of %d | %s | %s |' % (
            kind, s, ', '.join('%.2fx' % x for x in ratios), sum(1 for x in ratios if x <= 1.5), len(ratios),
            ', '.join(r['job_s'] for r in m), ', '.join(r['paced_s'] for r in m)))
L += ['', '| alone | setting | seconds, pass 1 | seconds, pass 2 (reverse order) |', '|---|---|---|---|']
for kind in ('run', 'compaction'):
    for s in ('effect', 'rate20', 'rate5', 'off'):
        m = {a['pass']: a['seconds'] for a in alone if a['kind'] == kind and a['setting'] == s}
        if m:
            L.append('| %s | %s | %s | %s |' % (kind, s, m.get('1', ''), m.get('2', '')))
import os
if os.path.exists(out + '/standby_lag.csv'):
    lag = list(csv.DictReader(open(out + '/standby_lag.csv')))
    L += ['', '| standby, max_replica_lag | samples | max lag (MB) | bound (MB) |', '|---|---|---|---|']
    for s in ('default', 'off'):
        m = [r for r in lag if r['setting'] == s and r['lag_bytes'].strip()]
        if m:
            L.append('| %s | %d | %.0f | %s |' % (s, len(m), max(float(r['lag_bytes']) for r in m) / 1048576,
                                             'none' if m[0]['bound_bytes'] == '-1' else '%.0f' % (float(m[0]['bound_bytes']) / 1048576)))
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(9, 4))
        for s, color in (('default', 'tab:green'), ('off', 'tab:red')):
            m = [r for r in lag if r['setting'] == s and r['lag_bytes'].strip()]
            if m:
                t0 = float(m[0]['t'])
                ax.plot([float(r['t']) - t0 for r in m], [float(r['lag_bytes']) / 1048576 for r in m], color=color,
                        label='max_replica_lag ' + ('256MB (default)' if s == 'default' else '-1 (off)'))
        ax.axhline(256, color='gray', linestyle='--', label='the bound')
        ax.set_xlabel('seconds'); ax.set_ylabel('standby replay lag (MB)'); ax.legend()
        ax.set_title('A streaming standby while runs go on back to back among inserts')
        fig.tight_layout(); fig.savefig(out + '/standby_lag.png', dpi=100)
        L.append('')
        L.append('![standby lag](standby_lag.png)')
    except ImportError:
        pass
open(out + '/summary.md', 'w').write('\n'.join(L) + '\n')
print('\n'.join(L))
PY
echo "== results in $out"
