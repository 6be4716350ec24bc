#!/usr/bin/env bash
# The whole archive_cluster test suite, from nothing, on every supported
# version (docs/versions.md):
#   PostgreSQL 15 (Debian's packages, installed by test/setup.sh): build and
#     install with PGXS, then `make installcheck` (regression, isolation and
#     TAP tests) on private temporary servers as the postgres OS user;
#   PostgreSQL 16, 17 and 18 (pinned packages from PyPI, npm and Debian,
#     in .pg16/, .pg17/, .pg18/): test/pg.sh builds against each and runs
#     the same regression and isolation suites and the TAP tests of the
#     worker, crashes, the pool and logical replication; on 18 also the
#     15 -> 18 upgrade test.  PostgreSQL 19: test/pg.sh compiles the sources
#     against its headers (no binaries that run on Debian 12).
#     ARCHIVE_CLUSTER_VERSIONS="16 18" limits them ("" for none);
#   real clients on PostgreSQL 15: test/clients/run.sh compares Django,
#     SQLAlchemy and psycopg 3 (pinned, installed from PyPI into
#     test/clients/.site) on a plain table and a table registered in each
#     mode; table mode must observe what the plain table does (or a
#     difference the docs list);
#   PostgreSQL 15 under valgrind's memcheck: test/memcheck.sh runs the
#     regression and isolation suites again with every server process under
#     memcheck; a read of freed or never-written memory fails the run, the
#     report printed (docs/reliability.md, section 8).
#     ARCHIVE_CLUSTER_SKIP_MEMCHECK=1 leaves it out.
# Prints a summary per version and suite, then a total line; exits non-zero
# on any failure.
#
#   sudo test/run.sh
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/test/setup.sh"

PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
export PG_CONFIG
version15=$($PG_CONFIG --version | awk '{print $2}')

# one line per version and suite: "<suite> (PostgreSQL <v>): N passed, N failed"
summary=()
total_passed=0
total_failed=0
record() {			# record SUITE VERSION PASSED FAILED
	summary+=("$1 (PostgreSQL $2): $3 passed, $4 failed")
	total_passed=$((total_passed + $3))
	total_failed=$((total_failed + $4))
}
# The counts of the last line of log $1 matching $2 ("...: N passed, N
# failed") into got_passed and got_failed; no such line, or a non-zero exit
# status $3 with no failure counted, is one failure.
counts_from() {
	local line
	line=$(grep -E "$2" "$1" | tail -1 || true)
	if [ -n "$line" ]; then
		got_passed=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
		got_failed=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
	else
		got_passed=0
		got_failed=1
	fi
	if [ "$3" -ne 0 ] && [ "$got_failed" -eq 0 ]; then
		got_failed=1
	fi
}
status=0
# What failed, from each suite's log, printed again just before the summary
# (CI shows the end of the output only)
failures=$(mktemp /tmp/archive_cluster_failures.XXXXXX)
note_failures() {	# note_failures LABEL LOG
	local lines
	lines=$(grep -E -A3 '^not ok|Failed test|timed out|^# Looks like|Dubious|\.\.\. FAILED|^ERROR:' "$2" | head -80 || true)
	[ -z "$lines" ] || printf '== %s\n%s\n' "$1" "$lines" >> "$failures"
}

# ---------------------------------------------------------------------------
# PostgreSQL 15
# ---------------------------------------------------------------------------
echo "== build and install (PostgreSQL $version15)"
work=$(mktemp -d /tmp/archive_cluster_test.XXXXXX)
make -C "$top" -s clean
build15=0
make -C "$top" -s PG_CONFIG="$PG_CONFIG" > "$work/build.log" 2>&1 || build15=$?
cat "$work/build.log"
if [ "$build15" -ne 0 ] || grep -qi 'warning' "$work/build.log"; then
	echo "== build (PostgreSQL $version15): FAILED (errors or warnings above)"
	record build "$version15" 0 1
	status=1
else
	make -C "$top" -s PG_CONFIG="$PG_CONFIG" install

	# The server refuses to run as root: test in a copy the postgres user owns.
	tar -C "$top" --exclude=.git --exclude='./.pg*' --exclude=test/clients/.site --exclude=test/clients/output -cf - . | tar -C "$work" -xf -
	chown -R postgres: "$work"

	echo "== regression, isolation and TAP tests (make installcheck: pg_regress, pg_isolation_regress, prove)"
	rc=0
	runuser -u postgres -- make -C "$work" -s PG_CONFIG="$PG_CONFIG" installcheck \
		> "$work/regress.log" 2>&1 || rc=$?
	cat "$work/regress.log"
	for d in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
		if [ -f "$d" ]; then
			echo "== $d"
			cat "$d"
		fi
	done
	# make installcheck runs the suites in this order, each after a "+++" line,
	# and stops at the first that fails.
	section() {		# lines of the log that belong to suite $1
		awk -v s="$1" '/^\+\+\+ regress /{c="regress"} /^\+\+\+ isolation /{c="isolation"}
			/^\+\+\+ tap /{c="tap"} c == s' "$work/regress.log"
	}
	count() { grep -cE "$1" || true; }
	pg_ok='^(test| ) *[a-z_0-9]+ +\.\.\. ok'
	pg_failed='\.\.\. FAILED|diff command failed'
	rp=$(section regress | count "$pg_ok")
	rf=$(section regress | count "$pg_failed")
	ip=$(section isolation | count "$pg_ok")
	if_=$(section isolation | count "$pg_failed")
	# prove: "t/001_x.pl .. ok" per passing file; a failing one is listed in
	# the "Test Summary Report" as "t/001_x.pl (Wstat: ... Failed: n)".
	tp=$(section tap | count '^t/[^ ]+ \.+ ok$')
	tf=$(section tap | count '^t/[^ ]+ +\(Wstat:')
	reached() { grep -q "^+++ $1 " "$work/regress.log"; }
	if [ "$rc" -ne 0 ] && [ $((rf + if_ + tf)) -eq 0 ]; then
		# failed without a test saying so (server start, missing file, ...):
		# charge it to the last suite that started
		last=$(grep -oE '^\+\+\+ (regress|isolation|tap) ' "$work/regress.log" | tail -1 | awk '{print $2}')
		case "$last" in
			isolation) if_=1 ;;
			tap) tf=1 ;;
			*) rf=1 ;;
		esac
	fi
	record regress "$version15" "$rp" "$rf"
	if reached isolation; then
		record isolation "$version15" "$ip" "$if_"
	else
		summary+=("isolation (PostgreSQL $version15): not run (an earlier suite failed)")
	fi
	if reached tap; then
		record tap "$version15" "$tp" "$tf"
	elif grep -qE '^TAP_TESTS *[:?]?= *[^ ]' "$top/Makefile"; then
		summary+=("tap (PostgreSQL $version15): not run (an earlier suite failed)")
	fi
	if [ "$rc" -ne 0 ] || [ $((rf + if_ + tf)) -ne 0 ]; then
		status=1
		note_failures "PostgreSQL $version15: make installcheck" "$work/regress.log"
	fi
fi
if [ "$status" -eq 0 ]; then
	rm -rf "$work"
else
	echo "PostgreSQL $version15 test outputs kept in $work"
fi

# ---------------------------------------------------------------------------
# Real clients on PostgreSQL 15 (test/clients/run.sh): Django, SQLAlchemy and
# psycopg 3 against a plain table and a table registered in each mode
# ---------------------------------------------------------------------------
if [ "$build15" -eq 0 ]; then
	echo
	echo "== real clients (test/clients/run.sh)"
	clog=$(mktemp /tmp/archive_cluster_clients_log.XXXXXX)
	set +e
	PG_CONFIG="$PG_CONFIG" bash "$top/test/clients/run.sh" </dev/null 2>&1 | tee "$clog"
	rcc=${PIPESTATUS[0]}
	set -e
	counts_from "$clog" '^clients: [0-9]+ passed, [0-9]+ failed$' "$rcc"
	record clients "$version15" "$got_passed" "$got_failed"
	[ "$got_failed" -eq 0 ] || { status=1; note_failures "real clients" "$clog"; }
	rm -f "$clog"
fi

# ---------------------------------------------------------------------------
# PostgreSQL 15 under valgrind: the regression and isolation suites again,
# every server process under memcheck (test/memcheck.sh)
# ---------------------------------------------------------------------------
memcheck_note=""
if [ "${ARCHIVE_CLUSTER_SKIP_MEMCHECK:-0}" = 1 ]; then
	memcheck_note="memcheck: not run (ARCHIVE_CLUSTER_SKIP_MEMCHECK=1)"
elif [ "$build15" -ne 0 ]; then
	summary+=("memcheck (PostgreSQL $version15): not run (the build failed)")
else
	echo
	mwork=$(mktemp -d /tmp/archive_cluster_memcheck.XXXXXX)
	mlog="$mwork.log"
	set +e
	bash "$top/test/memcheck.sh" "$mwork" </dev/null 2>&1 | tee "$mlog"
	rcm=${PIPESTATUS[0]}
	set -e
	counts_from "$mlog" '^memcheck \(PostgreSQL [0-9.]+\): [0-9]+ passed, [0-9]+ failed$' "$rcm"
	record memcheck "$version15" "$got_passed" "$got_failed"
	if [ "$got_failed" -ne 0 ]; then
		status=1
		note_failures "memcheck" "$mlog"
		echo "memcheck outputs kept in $mwork"
	else
		rm -rf "$mwork"
	fi
	rm -f "$mlog"
fi

# ---------------------------------------------------------------------------
# PostgreSQL 16, 17, 18 (regression, isolation and the worker's TAP tests;
# 18 also the 15 -> 18 upgrade) and 19 (compiled against its headers): each
# from a pinned registry package into .pg<major>/ (test/pg.sh)
# ---------------------------------------------------------------------------
other_notes=()
for major in ${ARCHIVE_CLUSTER_VERSIONS:-16 17 18 19}; do
	echo
	echo "== PostgreSQL $major (test/pg.sh $major)"
	logv=$(mktemp /tmp/archive_cluster_pg_log.XXXXXX)
	set +e
	bash "$top/test/pg.sh" "$major" </dev/null 2>&1 | tee "$logv"
	rcv=${PIPESTATUS[0]}
	set -e
	linesv=$(grep -E "^[a-z]+ \(PostgreSQL $major\): [0-9]+ passed, [0-9]+ failed$" "$logv" || true)
	failedv=0
	while read -r suite _ _ p _ f _; do
		[ -n "$suite" ] || continue
		record "$suite" "$major" "$p" "$f"
		failedv=$((failedv + f))
	done <<< "$(echo "$linesv" | sed 's/[(),:]/ /g')"
	if [ "$rcv" -ne 0 ]; then
		status=1
		note_failures "PostgreSQL $major (test/pg.sh)" "$logv"
		if [ "$failedv" -eq 0 ]; then
			record "test/pg.sh" "$major" 0 1
		fi
	fi
	rm -f "$logv"
done
[ -n "${ARCHIVE_CLUSTER_VERSIONS+x}" ] && other_notes+=("other versions: ${ARCHIVE_CLUSTER_VERSIONS:-none} (ARCHIVE_CLUSTER_VERSIONS)")

if [ -s "$failures" ]; then
	echo
	echo "== what failed (lines from the logs above)"
	cat "$failures"
fi
rm -f "$failures"
echo
echo "== summary"
for line in "${summary[@]}"; do
	echo "$line"
done
for line in "${other_notes[@]}"; do
	echo "$line"
done
[ -z "$memcheck_note" ] || echo "$memcheck_note"
echo "Every TAP test runs on PostgreSQL 15; on 16, 17 and 18 those of the worker, crashes, the pool, replication, replica lag and pacing (docs/versions.md). pg_cron and real clients: 15 only. 19: compiled, not run."
echo "$total_passed passed, $total_failed failed"
if [ "$status" -ne 0 ] || [ "$total_failed" -ne 0 ]; then
	exit 1
fi
exit 0
