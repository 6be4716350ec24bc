#!/usr/bin/env bash
# The whole archive_cluster test suite, from nothing: installs what it needs
# (test/setup.sh), builds and installs the extension, then runs the
# regression suite on a private temporary server as the postgres OS user.
# Prints a summary; exits non-zero on any failure.
#
#   sudo test/run.sh
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/test/setup.sh"

PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
export PG_CONFIG

echo "== build and install (PostgreSQL $($PG_CONFIG --version | awk '{print $2}'))"
make -C "$top" -s clean
make -C "$top" -s PG_CONFIG="$PG_CONFIG"
make -C "$top" -s PG_CONFIG="$PG_CONFIG" install

# The server refuses to run as root: test in a copy the postgres user owns.
work=$(mktemp -d /tmp/archive_cluster_test.XXXXXX)
tar -C "$top" --exclude=.git -cf - . | tar -C "$work" -xf -
chown -R postgres: "$work"

status=0
echo "== regression and isolation tests (pg_regress, pg_isolation_regress, temporary instances)"
runuser -u postgres -- make -C "$work" -s PG_CONFIG="$PG_CONFIG" installcheck \
	> "$work/regress.log" 2>&1 || status=$?
cat "$work/regress.log"
for d in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
	if [ -f "$d" ]; then
		echo "== $d"
		cat "$d"
	fi
done
passed=$(grep -cE '^(test| ) *[a-z_0-9]+ +\.\.\. ok' "$work/regress.log" || true)
failed=$(grep -cE '\.\.\. FAILED' "$work/regress.log" || true)
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
	failed=1
fi

echo
echo "== summary (PostgreSQL 15)"
echo "regress: $passed passed, $failed failed"
if [ "$status" -eq 0 ] && [ "$failed" -eq 0 ]; then
	rm -rf "$work"
	exit 0
fi
echo "test outputs kept in $work"
exit 1
