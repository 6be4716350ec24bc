#!/usr/bin/env bash
# Inserts into a table registered in table mode after REINDEX INDEX
# CONCURRENTLY of its primary key (issue 38, 4), against an identical table
# not reindexed, side by side in one run: a throw-away PostgreSQL 15 server
# as the postgres OS user, two tables a and b (identity key, 1,000 rows
# archived), then --rounds rounds each inserting --rows new rows into a and
# into b (alternating which goes first), each timed; medians and the ratio
# b/a.  With --control, b is not reindexed (the noise of the method).
#
#   sudo bench/guard_reindex.sh [--rows 300000] [--rounds 7] [--control]
set -euo pipefail

rows=300000
rounds=7
reindex="REINDEX INDEX CONCURRENTLY b_pkey;"
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=$2; shift 2 ;;
		--rounds) rounds=$2; shift 2 ;;
		--control) reindex=""; shift ;;
		-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
		*) echo "guard_reindex.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

. "$(dirname "$0")/lib/throwaway.sh"
throwaway_start guard 5798 archive_cluster.enabled=off autovacuum=off

psql -d postgres <<SQL
CREATE EXTENSION archive_cluster;
CREATE TABLE a (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, ts timestamp NOT NULL,
				cid int NOT NULL, pad text);
CREATE TABLE b (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, ts timestamp NOT NULL,
				cid int NOT NULL, pad text);
SELECT archive_cluster_register('a', '{cid,ts}', 'ts', '1 hour', mode => 'table');
SELECT archive_cluster_register('b', '{cid,ts}', 'ts', '1 hour', mode => 'table');
INSERT INTO a (ts, cid) SELECT timestamp '2000-01-01' + g * interval '1 s', g % 10 FROM generate_series(1, 1000) g;
INSERT INTO b (ts, cid) SELECT timestamp '2000-01-01' + g * interval '1 s', g % 10 FROM generate_series(1, 1000) g;
SELECT count(*) FROM archive_cluster_run(force => true);
$reindex
CREATE TABLE times (tbl text, round int, ms float8);
SQL
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) -eq 0 ]; then order="a b"; else order="b a"; fi
	for t in $order; do
		psql -d postgres <<SQL
SELECT clock_timestamp() AS t0 \gset
INSERT INTO $t (ts, cid, pad)
SELECT timestamp '2100-01-01' + g * interval '1 ms', g % 1000, 'x' FROM generate_series(1, $rows) g;
INSERT INTO times VALUES ('$t', $r, extract(epoch FROM clock_timestamp() - :'t0') * 1000);
SQL
	done
done
if [ -n "$reindex" ]; then label="after $reindex"; else label="not reindexed (control)"; fi
echo "== $rows-row inserts, $rounds rounds, b $label"
psql -d postgres <<'SQL'
SELECT tbl, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric) AS median_ms,
	   string_agg(round(ms)::text, ' ' ORDER BY round) AS each_ms
FROM times GROUP BY 1 ORDER BY 1;
SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE tbl = 'b') /
		percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE tbl = 'a'))::numeric, 3) AS "b/a"
FROM times;
SQL
