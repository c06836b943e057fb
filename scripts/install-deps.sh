#!/bin/sh
# scripts/install-deps.sh GROUP...: install what the make targets need, on
# Debian, as root.  The one place dprl calls apt-get and npm; each group is
# idempotent (installs only what is missing) and fails loudly, naming what
# it could not install.  The Makefile calls it:
#   base     building and make test: SQLite, LAPACKE, OpenBLAS, Python's
#            packaging tools, gnuplot, sqlglot, and the de_DE / fr_FR locales
#            that the locale tests set (make deps, demo, test)
#   node     better-sqlite3 built from source (kept in ~/.cache/dprl, copied
#            into build/node-deps), for the npm package's test (make
#            node-deps, test)
#   engines  PostgreSQL (with postgres_fdw), ClickHouse, and DuckDB's Node
#            API into build/engines/duckdb (make test-engines, bench)
#   fuzz     clang and libFuzzer's runtime (make fuzz)
#   clients  the analysts' clients of docs/clients.md, from Debian without
#            their recommends: R with DBI and RSQLite, pandas, SQLAlchemy,
#            sqlite-utils, litecli (make test-clients)
set -eu
cd "$(dirname "$0")/.."

BASE_PKGS="libsqlite3-dev sqlite3 liblapacke-dev libopenblas-dev python3 gnuplot-nox
  python3-build python3-setuptools python3-wheel python3-venv python3-apsw python3-sqlglot
  locales"
TEST_LOCALES="de_DE fr_FR"
PG_PKGS="postgresql postgresql-contrib"
CH_PKGS="clickhouse-server clickhouse-client"
FUZZ_PKGS="clang libclang-rt-dev"
CLIENT_PKGS="r-base-core r-cran-dbi r-cran-rsqlite python3-pandas python3-sqlalchemy
  sqlite-utils litecli"
NODE_PKGS="nodejs npm"
DUCKDB_NODE=${DUCKDB_NODE:-1.5.6-r.1}
DUCKDB_DIR=build/engines/duckdb
BETTER_SQLITE3=${BETTER_SQLITE3:-better-sqlite3@12.11.1}
NODEDIR=${NODEDIR:-/usr}

say() { echo "dprl: $*"; }
die() { echo "dprl: FAILED: $*" >&2; exit 1; }

# apt PKG...: install the packages that are not installed (APT_OPTS: more
# options for apt-get install, as apt_lean sets them)
APT_OPTS=""
apt() {
  need=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
  done
  [ -n "$need" ] || return 0
  [ "$(id -u)" = 0 ] || die "run as root, or: sudo apt-get install -y$need"
  say "installing$need"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $APT_OPTS $need; } >/dev/null \
    || die "apt-get install$need"
}

# apt_lean PKG...: the same without the packages they only recommend (R's
# recommends, r-base-dev and r-recommended, and pandas' matplotlib and scipy,
# are some 730 more packages)
apt_lean() { APT_OPTS=--no-install-recommends; apt "$@"; APT_OPTS=""; }

locales_for_tests() {
  for l in $TEST_LOCALES; do
    locale -a 2>/dev/null | grep -qx "$l.utf8" && continue
    [ "$(id -u)" = 0 ] || die "run as root, or: sudo localedef -i $l -f UTF-8 $l.UTF-8"
    say "generating the locale $l.UTF-8 (for the tests)"
    localedef -i "$l" -f UTF-8 "$l.UTF-8" || die "localedef -i $l -f UTF-8 $l.UTF-8"
  done
}

node_tools() {
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || apt $NODE_PKGS
}

# better-sqlite3 from source: its install script would fetch a prebuilt
# binary from GitHub, which this machine does not reach, and node-gyp would
# fetch Node's headers, so it takes them from the system (nodejs ships them).
# The build (five minutes on 2 cores) is kept in the user's cache, keyed by
# its version and Node's, like an installed package: a new checkout on the
# same machine copies it (DPRL_CACHE, default ~/.cache/dprl).
better_sqlite3() {
  out=build/node-deps/node_modules/better-sqlite3/build/Release/better_sqlite3.node
  [ -f "$out" ] && return 0
  node_tools
  [ -f "$NODEDIR/include/node/common.gypi" ] || die "no Node headers in $NODEDIR/include/node (set NODEDIR)"
  cache=${DPRL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dprl}/node-deps-$BETTER_SQLITE3-node$(node --version)
  if [ ! -f "$cache/node_modules/better-sqlite3/build/Release/better_sqlite3.node" ]; then
    rm -rf "$cache.tmp" && mkdir -p "$cache.tmp" || die "mkdir $cache.tmp"
    say "building $BETTER_SQLITE3 from source into $cache (once per machine, a few minutes)"
    (cd "$cache.tmp" && echo '{"name": "dprl-test-deps", "private": true}' > package.json &&
      npm_config_build_from_source=true npm_config_nodedir="$NODEDIR" \
        npm install --no-audit --no-fund --no-save "$BETTER_SQLITE3" > install.log 2>&1) \
      || { tail -30 "$cache.tmp/install.log"; die "npm install $BETTER_SQLITE3"; }
    [ -f "$cache.tmp/node_modules/better-sqlite3/build/Release/better_sqlite3.node" ] \
      || { tail -30 "$cache.tmp/install.log"; die "better_sqlite3.node was not built"; }
    rm -rf "$cache" && mv "$cache.tmp" "$cache" || die "mv $cache.tmp $cache"
  fi
  mkdir -p build && rm -rf build/node-deps && cp -a "$cache" build/node-deps \
    || die "cp -a $cache build/node-deps"
  [ -f "$out" ] || die "$out was not copied"
}

duckdb() {
  grep -qs "\"version\": \"$DUCKDB_NODE\"" "$DUCKDB_DIR/node_modules/@duckdb/node-api/package.json" && return 0
  node_tools
  say "installing @duckdb/node-api@$DUCKDB_NODE into $DUCKDB_DIR"
  mkdir -p "$DUCKDB_DIR"
  (cd "$DUCKDB_DIR" && npm install --no-audit --no-fund --loglevel=error "@duckdb/node-api@$DUCKDB_NODE" >/dev/null) \
    || die "npm install @duckdb/node-api@$DUCKDB_NODE"
}

postgres() {
  apt $PG_PKGS
  ls /usr/lib/postgresql/*/lib/postgres_fdw.so >/dev/null 2>&1 \
    || die "PostgreSQL has no postgres_fdw (package postgresql-contrib)"
}

[ $# -gt 0 ] || { sed -n '/^set -eu/q;2,$p' "$0"; exit 2; }
for group in "$@"; do
  case "$group" in
    base) apt $BASE_PKGS; locales_for_tests ;;
    node) better_sqlite3 ;;
    engines) postgres; apt $CH_PKGS; duckdb ;;
    pg) postgres ;;
    clickhouse) apt $CH_PKGS ;;
    duckdb) duckdb ;;
    fuzz) apt $FUZZ_PKGS ;;
    clients) apt_lean $CLIENT_PKGS ;;
    *) die "unknown group $group (base, node, engines, pg, clickhouse, duckdb, fuzz, clients)" ;;
  esac
done
