#!/bin/sh
# sql/pg_local.sh: a throwaway PostgreSQL server on loopback, for the
# scale-out demo (sql/scale_out_pg.sh) and `make test-engines`.
#
#   sql/pg_local.sh port            print a free TCP port on 127.0.0.1
#   sql/pg_local.sh start DIR PORT  initdb DIR (if new), start a server that
#                                   listens on 127.0.0.1:PORT only (socket in
#                                   DIR), trust authentication, user postgres
#   sql/pg_local.sh stop DIR        stop it (fast shutdown)
#
# Uses Debian's packages (apt-get install postgresql postgresql-contrib);
# says so and fails when they are missing.  As root, the server runs as the
# postgres user (initdb refuses root), so DIR is handed to that user.
# awk, printf and gnuplot write and read numbers in the "C" locale,
# whatever locale the caller runs in.
export LC_ALL=C
set -eu

bindir() {
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
  done
  echo "pg_local.sh: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb);" \
       "install it with: apt-get install -y postgresql postgresql-contrib" >&2
  return 1
}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
  port)
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    ;;
  start)
    dir=$2
    port=$3
    bin=$(bindir)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
      chown postgres "$dir"
      # the postgres user must be able to reach DIR (a mktemp -d parent is 0700)
      as_pg test -x "$dir" || chmod o+x "$(dirname "$dir")"
      as_pg test -x "$dir" || { echo "pg_local.sh: user postgres cannot reach $dir" >&2; exit 1; }
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=20" \
      start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    ;;
  stop)
    dir=$2
    bin=$(bindir)
    as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  *)
    echo "usage: $0 port | start DIR PORT | stop DIR" >&2
    exit 2
    ;;
esac
