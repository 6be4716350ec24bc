#!/usr/bin/env bash
# The archive's indexes after compactions (issue 38, 7), side by side in one
# run: a throw-away PostgreSQL 15 server as the postgres OS user, the seed's
# table (t(ts, id, cid, pad), 10,000 customers, pad 0-200 characters,
# indexes (id) and (cid, ts)) twice, registered in view mode: "a" and "b"
# get the same rows, --runs runs of --rows-per-run rows each, and after each
# run archive_cluster_compact() (when due) and a VACUUM of the archive, as
# the worker does.  "b" then also gets what the worker does since issue 38:
# each btree index of its archive whose leaf pages are less full, over a
# fresh build's (0.9), than --rebuild-fill (archive_cluster_index_fill(), as
# archive_cluster.index_rebuild_fill, default 0.8) is rebuilt with REINDEX
# INDEX CONCURRENTLY.  At the end, for both: the archive's heap and each index
# (size, pgstatindex's avg_leaf_density), and each index's size over a fresh
# build of the same rows (REINDEX, at the very end).
#
#   sudo bench/index_fill.sh [--runs 20] [--rows-per-run 550000] [--rebuild-fill 0.8]
set -euo pipefail

runs=20
per_run=550000
fill=0.8
while [ $# -gt 0 ]; do
	case "$1" in
		--runs) runs=$2; shift 2 ;;
		--rows-per-run) per_run=$2; shift 2 ;;
		--rebuild-fill) fill=$2; shift 2 ;;
		-h|--help) sed -n '2,17p' "$0"; exit 0 ;;
		*) echo "index_fill.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

. "$(dirname "$0")/lib/throwaway.sh"
throwaway_start fill 5797 archive_cluster.enabled=off autovacuum=off shared_buffers=1GB \
	maintenance_work_mem=512MB max_wal_size=8GB archive_cluster.compaction_max_wal_rate=0 \
	archive_cluster.run_max_wal_rate=0
psql_db() { psql -d postgres "$@"; }

psql_db <<SQL
CREATE EXTENSION archive_cluster;
CREATE EXTENSION pgstattuple;
CREATE TABLE a (ts timestamp NOT NULL, id bigint PRIMARY KEY, cid int NOT NULL, pad varchar(200));
CREATE INDEX ON a (cid, ts);
CREATE TABLE b (ts timestamp NOT NULL, id bigint PRIMARY KEY, cid int NOT NULL, pad varchar(200));
CREATE INDEX ON b (cid, ts);
SELECT archive_cluster_register('a', '{cid,ts}', 'ts', '1 hour', batch_rows => $per_run);
SELECT archive_cluster_register('b', '{cid,ts}', 'ts', '1 hour', batch_rows => $per_run);
SELECT setseed(0.38);
CREATE TABLE rebuilds (run int, index_name text, fill float8, pages bigint);
CREATE TABLE steps (run int, compaction_s float8, rebuild_s float8);
SQL
echo "== $runs runs of $per_run rows into a and b (view mode), compaction when due after each; b: rebuild below $fill"
for r in $(seq 1 "$runs"); do
	from=$(( (r - 1) * per_run + 1 ))
	to=$(( r * per_run ))
	psql_db <<SQL
\\o /dev/null
CREATE TEMP TABLE rows_in AS
SELECT timestamp '2000-01-01' + g * interval '10 ms' AS ts, g AS id, 1 + (random() * 9999)::int AS cid,
	   repeat('x', (random() * 200)::int) AS pad
FROM generate_series($from, $to) g;
INSERT INTO a SELECT * FROM rows_in;
INSERT INTO b SELECT * FROM rows_in;
SELECT count(*) FROM archive_cluster_run('a', force => true);
SELECT count(*) FROM archive_cluster_run('b', force => true);
SELECT count(*) FROM archive_cluster_compact('a');
SELECT coalesce(sum(rows_rewritten), 0) AS b_rewritten,
	   coalesce(sum(extract(epoch FROM duration)), 0) AS b_compaction_s FROM archive_cluster_compact('b') \gset
VACUUM a_archive;
VACUUM b_archive;
-- what the worker does after compacting b: rebuild its archive's sparse btree indexes
INSERT INTO rebuilds
SELECT $r, i.indexrelid::regclass::text, archive_cluster_index_fill(i.indexrelid),
	   pg_relation_size(i.indexrelid) / 8192
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE :b_rewritten > 0 AND i.indrelid = 'b_archive'::regclass AND c.relam = 403
  AND pg_relation_size(i.indexrelid) >= 128 * 8192
  AND archive_cluster_index_fill(i.indexrelid) / 0.9 < $fill;
SELECT clock_timestamp() AS t0 \gset
SELECT format('REINDEX INDEX CONCURRENTLY %s', index_name) FROM rebuilds WHERE run = $r \gexec
INSERT INTO steps SELECT $r, :b_compaction_s, extract(epoch FROM clock_timestamp() - :'t0') WHERE :b_rewritten > 0;
SQL
	echo "run $r done"
done

echo "== the archives at the end"
psql_db <<'SQL'
\pset footer off
SELECT count(*) AS compactions_a FROM archive_cluster_runs WHERE relation = 'a'::regclass AND kind = 'compaction';
SELECT count(*) AS compactions_b FROM archive_cluster_runs WHERE relation = 'b'::regclass AND kind = 'compaction';
SELECT run, index_name, round(fill::numeric, 3) AS fill_before, pages AS pages_before FROM rebuilds ORDER BY run, index_name;
-- b's compactions and the rebuilds after them, in seconds
SELECT run, round(compaction_s::numeric, 1) AS compaction_s, round(rebuild_s::numeric, 1) AS rebuild_s FROM steps ORDER BY run;
CREATE TEMP TABLE final AS
SELECT c.relname, c.oid, pg_relation_size(c.oid) AS bytes,
	   CASE WHEN c.relkind = 'i' THEN (pgstatindex(c.oid::regclass)).avg_leaf_density END AS leaf_density
FROM pg_class c WHERE c.relname IN ('a_archive', 'b_archive')
   OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('a_archive'::regclass, 'b_archive'::regclass));
REINDEX TABLE a_archive;
REINDEX TABLE b_archive;
SELECT f.relname, pg_size_pretty(f.bytes) AS size, f.leaf_density,
	   CASE WHEN f.leaf_density IS NOT NULL THEN pg_size_pretty(pg_relation_size(f.relname::regclass)) END AS fresh_build,
	   CASE WHEN f.leaf_density IS NOT NULL THEN round(f.bytes::numeric / pg_relation_size(f.relname::regclass), 2) END AS over_fresh
FROM final f ORDER BY f.relname;
SELECT left(relname, 1) AS tbl,
	   pg_size_pretty(sum(bytes) FILTER (WHERE leaf_density IS NOT NULL)) AS archive_indexes,
	   pg_size_pretty(sum(pg_relation_size(relname::regclass)) FILTER (WHERE leaf_density IS NOT NULL)) AS fresh_build,
	   round(sum(bytes) FILTER (WHERE leaf_density IS NOT NULL)::numeric /
			 sum(pg_relation_size(relname::regclass)) FILTER (WHERE leaf_density IS NOT NULL), 2) AS over_fresh
FROM final GROUP BY 1 ORDER BY 1;
SQL
