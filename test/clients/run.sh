#!/usr/bin/env bash
# Real-client comparison test (issue 16): Django, SQLAlchemy 2 and psycopg 3
# against a plain table and a table registered with archive_cluster in each
# mode (test/clients/compare.py).  Table mode must behave as the plain table in
# every check; view mode's differences go to $CLIENTS_OUT/view-mode-differences.md.
#
#   sudo test/clients/run.sh            (after `make install`)
#
# As root, installs what is missing: python3 and python3-pip (apt-get), the
# pinned Python packages of requirements.txt into test/clients/.site (pip
# --target; nothing system-wide).  Starts a throw-away PostgreSQL server as
# the postgres OS user (initdb in a temporary directory, private port and unix
# socket directory, shared_preload_libraries = 'archive_cluster'), runs
# compare.py, stops the server by its pid.  The extension must already be
# installed into that PostgreSQL.  Prints "clients: N passed, N failed" last;
# exits non-zero on any failure.
#
# Environment: PG_CONFIG (default Debian's PostgreSQL 15), CLIENTS_PGPORT
# (default 5577), CLIENTS_SITE (default test/clients/.site), CLIENTS_OUT
# (default test/clients/output), CLIENTS_ARGS (passed to compare.py, e.g. "-k sa_").
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
port=${CLIENTS_PGPORT:-5577}
site=${CLIENTS_SITE:-$here/.site}
out=${CLIENTS_OUT:-$here/output}
py=/usr/bin/python3		# Debian's; never a pyenv shim

passed=0
failed=0
tmp=""
pgpid=""
closing() {
	stop_server
	if [ -n "$tmp" ]; then
		if [ "$failed" -eq 0 ]; then
			rm -rf "$tmp"
		else
			echo "clients: server directory and log kept in $tmp"
		fi
	fi
	echo "clients: $passed passed, $failed failed"
}
trap closing EXIT
die() {
	echo "clients: $*" >&2
	failed=$((failed + 1))
	exit 1
}

stop_server() {
	[ -n "$pgpid" ] || return 0
	kill -INT "$pgpid" 2>/dev/null || true		# fast shutdown
	for _ in $(seq 1 600); do
		kill -0 "$pgpid" 2>/dev/null || { pgpid=""; return 0; }
		sleep 0.1
	done
	kill -QUIT "$pgpid" 2>/dev/null || true		# immediate shutdown
	pgpid=""
}

if [ "$(id -u)" -eq 0 ]; then
	as_pg=(runuser -u postgres --)
else
	as_pg=()
fi

# --- what is missing --------------------------------------------------------
need=""
[ -x "$py" ] || need="$need python3"
"$py" -m pip --version >/dev/null 2>&1 || need="$need python3-pip"
if [ -n "$need" ]; then
	[ "$(id -u)" -eq 0 ] || die "missing:$need (run as root to install them)"
	echo "== clients: apt-get install$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq </dev/null || die "apt-get update failed"
	apt-get install -y -qq --no-install-recommends $need </dev/null || die "apt-get install$need failed"
fi
stamp=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$site/.requirements.sha256" 2>/dev/null)" != "$stamp" ]; then
	echo "== clients: pip install --target $site -r requirements.txt"
	rm -rf "$site"
	"$py" -m pip install --quiet --disable-pip-version-check --no-input --no-warn-script-location \
		--root-user-action=ignore --target "$site" -r "$here/requirements.txt" </dev/null \
		|| die "pip install failed"
	echo "$stamp" > "$site/.requirements.sha256"
fi

[ -x "$PG_CONFIG" ] || die "no $PG_CONFIG (set PG_CONFIG)"
bindir=$("$PG_CONFIG" --bindir)
[ -f "$("$PG_CONFIG" --pkglibdir)/archive_cluster.so" ] && \
	[ -f "$("$PG_CONFIG" --sharedir)/extension/archive_cluster.control" ] || \
	die "archive_cluster is not installed into $("$PG_CONFIG" --bindir)/.. (run make install first)"

# --- a throw-away server ----------------------------------------------------
tmp=$(mktemp -d /tmp/archive_cluster_clients.XXXXXX)
chmod 755 "$tmp"
[ "$(id -u)" -ne 0 ] || chown postgres: "$tmp"
"${as_pg[@]}" "$bindir/initdb" -D "$tmp/data" -U postgres -A trust -N --no-instructions \
	> "$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log"; die "initdb failed"; }
cat >> "$tmp/data/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$tmp'
shared_preload_libraries = 'archive_cluster'
# every archive run of the test is explicit (archive_cluster_run(force => true)):
# the worker would move rows at times of its own choosing
archive_cluster.enabled = off
max_connections = 60
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
"${as_pg[@]}" "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 start > /dev/null \
	|| { cat "$tmp/server.log"; die "the server did not start"; }
pgpid=$(head -1 "$tmp/data/postmaster.pid")

# --- the test ---------------------------------------------------------------
mkdir -p "$out"
rm -f "$out/summary.txt"
rc=0
# shellcheck disable=SC2086
PYTHONPATH="$site" PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 \
	PGHOST="$tmp" PGPORT="$port" PGUSER=postgres \
	timeout --kill-after=10 900 "$py" -s "$here/compare.py" --out "$out" ${CLIENTS_ARGS:-} </dev/null || rc=$?
if [ -f "$out/summary.txt" ]; then
	read -r passed failed < "$out/summary.txt"
fi
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	echo "clients: compare.py exited with $rc"
	failed=1
fi
stop_server
if grep -qE 'PANIC|TRAP:|terminated by signal' "$tmp/server.log"; then
	echo "clients: the server log reports a crash:"
	grep -E -B2 -A5 'PANIC|TRAP:|terminated by signal' "$tmp/server.log"
	failed=$((failed + 1))
fi
[ "$failed" -eq 0 ]
