# A throw-away PostgreSQL 15 server for the small benchmarks of bench/
# (sourced): installs what is missing, builds and installs archive_cluster,
# and provides
#   throwaway_start NAME PORT [postgres -c options...]
#       initdb and start a server as the postgres OS user in a new
#       /tmp/archive_cluster_NAME.XXXXXX, stopped (by its pid) and removed
#       when the script exits;
#   psql ...   psql as postgres on that server (-X -q, ON_ERROR_STOP).
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bash "$top/test/setup.sh"
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
bindir=$($PG_CONFIG --bindir)
make -C "$top" -s PG_CONFIG="$PG_CONFIG"
make -C "$top" -s PG_CONFIG="$PG_CONFIG" install

as_pg() { runuser -u postgres -- "$@"; }

throwaway_cleanup() {
	if [ -n "${pgdata:-}" ] && [ -f "$pgdata/postmaster.pid" ]; then
		local pid
		pid=$(head -1 "$pgdata/postmaster.pid")
		as_pg "$bindir/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null || kill "$pid" || true
	fi
	[ -z "${work:-}" ] || rm -rf "$work"
}

throwaway_start() {
	local name=$1 opts=""
	throwaway_port=$2
	shift 2
	for o in "$@"; do
		opts="$opts -c $o"
	done
	work=$(mktemp -d "/tmp/archive_cluster_$name.XXXXXX")
	chown postgres: "$work"
	pgdata="$work/data"
	trap throwaway_cleanup EXIT
	as_pg "$bindir/initdb" -D "$pgdata" -A trust >/dev/null
	as_pg "$bindir/pg_ctl" -D "$pgdata" -w -l "$work/log" \
		-o "-p $throwaway_port -k $work -c shared_preload_libraries=archive_cluster$opts" start >/dev/null
	psql() { as_pg "$bindir/psql" -h "$work" -p "$throwaway_port" -X -q -v ON_ERROR_STOP=1 "$@"; }
}
