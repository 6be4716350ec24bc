#!/usr/bin/env bash
# The regression and isolation suites again, with every PostgreSQL 15 server
# process under valgrind's memcheck (test/memcheck/): a read of memory that
# PostgreSQL has freed (pfree, a reset or deleted memory context, free()),
# or of memory never written, fails the run and the report is printed.
# Expects archive_cluster built and installed for PostgreSQL 15
# (test/run.sh does both first).  Run as root; the servers run as postgres.
#
#   test/memcheck.sh [WORKDIR]
# Prints "memcheck (PostgreSQL 15): N passed, N failed" (tests that passed;
# failed tests plus processes with a memcheck report) and exits non-zero on
# any failure.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$($PG_CONFIG --bindir)
work=${1:-$(mktemp -d /tmp/archive_cluster_memcheck.XXXXXX)}
mkdir -p "$work"

if ! command -v valgrind >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends valgrind </dev/null
fi

# The wrappers, and a bin directory whose postgres starts valgrind; every
# other program is the real one (initdb resolves its link and runs the real
# postgres, so only the servers of the suites run under valgrind).
vg="$work/memcheck"
mkdir -p "$vg/bin" "$vg/logs"
cp "$top/test/memcheck/postgres" "$top/test/memcheck/valgrind.supp" "$vg/"
gcc -O1 -g -shared -fPIC -Wall -Werror -I"$($PG_CONFIG --includedir-server)" \
	-o "$vg/ac_memcheck.so" "$top/test/memcheck/ac_memcheck.c"
for f in "$bindir"/*; do
	ln -sf "$f" "$vg/bin/$(basename "$f")"
done
ln -sf "$vg/postgres" "$vg/bin/postgres"

tar -C "$top" --exclude=.git --exclude='./.pg*' --exclude=test/clients/.site --exclude=test/clients/output -cf - . | tar -C "$work" -xf -
rm -rf "$work/results" "$work/output_iso" "$work/tmp_check" "$work/tmp_check_iso"
chown -R postgres: "$work"

# The regression and the isolation suite each start a server of their own
# (tmp_check, tmp_check_iso): run them side by side, one per core.
echo "== memcheck: regression and isolation tests under valgrind (PostgreSQL 15)"
suite() {			# suite NAME REGRESS ISOLATION
	mkdir -p "$vg/logs/$1"
	chown postgres: "$vg/logs/$1"
	runuser -u postgres -- env AC_MEMCHECK_DIR="$vg" AC_MEMCHECK_LOGS="$vg/logs/$1" \
		AC_MEMCHECK_POSTGRES="$bindir/postgres" PGCTLTIMEOUT=600 \
		make -C "$work" -s PG_CONFIG="$PG_CONFIG" installcheck TAP_TESTS= \
		REGRESS="$2" ISOLATION="$3" EXTRA_REGRESS_OPTS="--bindir=$vg/bin" \
		> "$work/memcheck-$1.log" 2>&1
}
makevar() {			# the value of a variable of the Makefile
	make -C "$top" -s --no-print-directory PG_CONFIG="$PG_CONFIG" -f Makefile -f - print-$1 <<'MK'
print-%:
	@echo $($*)
MK
}
regress=$(makevar REGRESS)
# run_pacing is left out: it asserts that a run sleeps to stay under
# archive_cluster.run_max_wal_rate (1 MB/s at least) among other writers, and
# under valgrind the run itself can write slower than that, with nothing to
# pace (a wall-clock behaviour: failed so on cbcc926, passed on 8bb2317).
# Its C path is that of every run (ac_throttle), sleep aside.
isolation=$(makevar ISOLATION | tr ' ' '\n' | grep -vx run_pacing | tr '\n' ' ')
started=$(date +%s)
rc_r=0
rc_i=0
suite regress "$regress" "" &
pid_r=$!
suite isolation "" "$isolation" &
pid_i=$!
wait $pid_r || rc_r=$?
wait $pid_i || rc_i=$?
cat "$work/memcheck-regress.log" "$work/memcheck-isolation.log" > "$work/memcheck.log"
cat "$work/memcheck.log"
echo "== memcheck: suites took $(( $(date +%s) - started )) s"
for d in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
	if [ -f "$d" ]; then
		echo "== $d"
		cat "$d"
	fi
done

passed=$(grep -cE '^(test| ) *[a-z_0-9]+ +\.\.\. ok' "$work/memcheck.log" || true)
failed=$(grep -cE '\.\.\. FAILED|diff command failed' "$work/memcheck.log" || true)
if [ $((rc_r + rc_i)) -ne 0 ] && [ "$failed" -eq 0 ]; then
	failed=1
fi

# One log per process; a report lies between the markers.
reported=$(grep -l 'AC-MEMCHECK-BEGIN' "$vg"/logs/*/*.log 2>/dev/null || true)
nreported=$(echo -n "$reported" | grep -c . || true)
if [ "$nreported" -gt 0 ]; then
	echo "== memcheck: $nreported server processes reported memory errors"
	for f in $reported; do
		echo "== $f"
		sed -n '/AC-MEMCHECK-BEGIN/,/AC-MEMCHECK-END/p' "$f"
	done
	failed=$((failed + nreported))
fi
echo "memcheck (PostgreSQL 15): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
