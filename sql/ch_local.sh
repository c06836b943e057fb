#!/bin/sh
# sql/ch_local.sh: throwaway ClickHouse servers on loopback, one cluster, for
# `make test-engines` (tests/engines/clickhouse.py) and sql/scale_out_ch.sh.
#
#   sql/ch_local.sh start DIR N  start N servers (N >= 1), each in DIR/nodeI
#                                (its own data dir, config.xml, users.xml,
#                                logs), listening on 127.0.0.1 only, on free
#                                ports; each config names the cluster `dprl`
#                                of all N servers, one shard each, in order.
#                                Waits until every server answers, then prints
#                                their native (TCP) ports, one a line; the
#                                ports are also in DIR/ports ("tcp http
#                                interserver" a line).  If one does not start,
#                                stops all of them, prints its log, exits 1.
#   sql/ch_local.sh ports DIR    print the TCP ports again
#   sql/ch_local.sh stop DIR     stop them (SIGTERM, then SIGKILL after 30 s)
#
# Uses Debian's clickhouse-server and clickhouse-client (18.16; `apt-get
# install -y clickhouse-server clickhouse-client`, or `make clickhouse-deps`)
# and says so when they are missing.  The server runs as the calling user:
# Debian's 18.16 server does not refuse root (DIR must be writable by it).
# User `default`, no password, accepted from 127.0.0.1 only.
# awk, printf and gnuplot write and read numbers in the "C" locale,
# whatever locale the caller runs in.
export LC_ALL=C
set -eu

server_bin() {
  for b in /usr/bin/clickhouse-server /usr/sbin/clickhouse-server; do
    if [ -x "$b" ]; then echo "$b"; return 0; fi
  done
  echo "ch_local.sh: ClickHouse is not installed (no clickhouse-server); install it with:" \
       "apt-get install -y clickhouse-server clickhouse-client" >&2
  return 1
}

need_client() {
  command -v clickhouse-client >/dev/null 2>&1 || {
    echo "ch_local.sh: clickhouse-client is missing; install it with:" \
         "apt-get install -y clickhouse-server clickhouse-client" >&2
    return 1
  }
}

stop_all() { # stop_all DIR
  pids=""
  for f in "$1"/node*/pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    if kill -0 "$p" 2>/dev/null; then kill -TERM "$p" 2>/dev/null || true; pids="$pids $p"; fi
    rm -f "$f"
  done
  for p in $pids; do
    i=0
    while kill -0 "$p" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$p" 2>/dev/null; then
      echo "ch_local.sh: server $p did not stop in 30 s; killing it" >&2
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
}

write_config() { # write_config NODEDIR TCP HTTP INTER CLUSTER_XML
  d=$1
  cat >"$d/config.xml" <<EOF
<?xml version="1.0"?>
<!-- written by sql/ch_local.sh -->
<yandex>
  <logger>
    <level>warning</level>
    <log>$d/server.log</log>
    <errorlog>$d/server.err.log</errorlog>
    <console>0</console>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>$2</tcp_port>
  <http_port>$3</http_port>
  <interserver_http_port>$4</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <path>$d/data/</path>
  <tmp_path>$d/data/tmp/</tmp_path>
  <user_files_path>$d/data/user_files/</user_files_path>
  <format_schema_path>$d/data/format_schemas/</format_schema_path>
  <users_config>$d/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
  <remote_servers>
    <dprl>
$5    </dprl>
  </remote_servers>
</yandex>
EOF
  cat >"$d/users.xml" <<EOF
<?xml version="1.0"?>
<!-- written by sql/ch_local.sh -->
<yandex>
  <profiles>
    <default>
      <max_memory_usage>4000000000</max_memory_usage>
      <load_balancing>in_order</load_balancing>
    </default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas>
    <default>
      <interval>
        <duration>3600</duration>
        <queries>0</queries>
        <errors>0</errors>
        <result_rows>0</result_rows>
        <read_rows>0</read_rows>
        <execution_time>0</execution_time>
      </interval>
    </default>
  </quotas>
</yandex>
EOF
}

case "${1:-}" in
  start)
    [ $# -eq 3 ] || { echo "usage: $0 start DIR N" >&2; exit 2; }
    dir=$2
    n=$3
    case "$n" in ''|*[!0-9]*) echo "ch_local.sh: N must be a number, got '$n'" >&2; exit 2 ;; esac
    [ "$n" -ge 1 ] || { echo "ch_local.sh: N must be >= 1" >&2; exit 2; }
    bin=$(server_bin)
    need_client
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if ls "$dir"/node*/pid >/dev/null 2>&1; then
      echo "ch_local.sh: servers of $dir are running already (stop them first)" >&2; exit 1
    fi
    trap 'stop_all "$dir"' EXIT
    # 3 free ports per server, all held open at once so that they differ
    python3 -c '
import socket, sys
socks = []
for _ in range(3 * int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
ports = [s.getsockname()[1] for s in socks]
for i in range(0, len(ports), 3):
    print(*ports[i:i + 3])
' "$n" >"$dir/ports"
    shards=""
    for tcp in $(cut -d" " -f1 "$dir/ports"); do
      shards="$shards      <shard><replica><host>127.0.0.1</host><port>$tcp</port></replica></shard>
"
    done
    i=1
    while read -r tcp http inter; do
      d="$dir/node$i"
      mkdir -p "$d/data"
      write_config "$d" "$tcp" "$http" "$inter" "$shards"
      "$bin" --config-file="$d/config.xml" </dev/null >"$d/stdout.log" 2>&1 &
      echo $! >"$d/pid"
      i=$((i + 1))
    done <"$dir/ports"
    i=1
    while read -r tcp http inter; do
      d="$dir/node$i"
      pid=$(cat "$d/pid")
      k=0
      until clickhouse-client --host 127.0.0.1 --port "$tcp" --query "SELECT 1" >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null || [ $k -ge 600 ]; then
          echo "ch_local.sh: ClickHouse server $i of $n (127.0.0.1:$tcp) did not start:" >&2
          tail -n 30 "$d/stdout.log" "$d/server.err.log" >&2 2>/dev/null || true
          exit 1
        fi
        sleep 0.1
        k=$((k + 1))
      done
      i=$((i + 1))
    done <"$dir/ports"
    trap - EXIT
    cut -d" " -f1 "$dir/ports"
    ;;
  ports)
    [ $# -eq 2 ] || { echo "usage: $0 ports DIR" >&2; exit 2; }
    cut -d" " -f1 "$2/ports"
    ;;
  stop)
    [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
    stop_all "$2"
    ;;
  *)
    echo "usage: $0 start DIR N | ports DIR | stop DIR" >&2
    exit 2
    ;;
esac
