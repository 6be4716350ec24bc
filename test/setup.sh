#!/usr/bin/env bash
# Installs what building and testing archive_cluster needs on Debian 12, as root,
# only when something is missing: PostgreSQL 15 server and headers, pg_cron, pg_partman,
# the Perl modules for TAP tests, valgrind for the memory check.  Safe to run again.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: run as root (it installs packages with apt-get)" >&2
	exit 1
fi

pkgs="postgresql-15 postgresql-server-dev-15 postgresql-15-cron postgresql-15-partman postgresql-contrib-15 libipc-run-perl make gcc valgrind"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# postgresql-contrib-15 is a virtual name on Debian 12: contrib ships inside postgresql-15
missing=$(echo "$missing" | sed 's/ postgresql-contrib-15//')
if [ -n "$missing" ]; then
	echo "setup.sh: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends $missing </dev/null
fi
id postgres >/dev/null
