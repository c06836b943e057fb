#!/bin/sh
# tests/engines/run.sh (make test-engines): the per-engine SQL on SQLite,
# PostgreSQL and DuckDB, the postgres_fdw demo and the sqlite3-shell shard
# script.  Prints each "ok"/"not ok" line, then "N passed, M failed".
set -u
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
SQLITE3=${SQLITE3:-sqlite3}
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT
pass=0
fail=0

count() { # count LABEL FILE STATUS
  p=$(grep -c '^ok' "$2")
  f=$(grep -c '^not ok' "$2")
  if [ "$3" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "not ok $1 exited with status $3" >>"$2"
    f=1
  fi
  echo "[$1] $p ok, $f not ok"
  grep -A12 '^not ok' "$2" | grep '^not ok\|^#' | sed "s/^/[$1] /"
  pass=$((pass + p))
  fail=$((fail + f))
}

"$PYTHON" tests/engines/test_engines.py >"$LOG/engines" 2>&1
count test_engines.py "$LOG/engines" $?

# the multi-server demo: its own checks make it exit non-zero
sh sql/scale_out_pg.sh >"$LOG/demo.out" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "^check: with seed 7" "$LOG/demo.out" \
   && grep -q "^check: every state's visits" "$LOG/demo.out" \
   && grep -q "^check: a shard made at gamma = 0.95 is named" "$LOG/demo.out"; then
  echo "ok sql/scale_out_pg.sh: 2 postgres_fdw shards, checks 0, statistics = dp_fv_stats, release = dp_lsw on the whole log, a shard at gamma 0.95 refused"
else
  echo "not ok sql/scale_out_pg.sh (status $status)"
  sed 's/^/# /' "$LOG/demo.out" | tail -30
fi >"$LOG/demo"
count scale_out_pg.sh "$LOG/demo" 0

# the sqlite3-shell version
# It ends with the release refused for a shard made at gamma = 0.95: that
# error, and no other, makes the shell exit 1.
"$SQLITE3" :memory: <sql/shard_release.sql >"$LOG/shard.out" 2>&1
status=$?
zeros=$(grep -c '^shard [012]|0|0|0|0|0|0|0|0|0|0|0$' "$LOG/shard.out")
refused='dp_lsw_from_stats: the statistics of buckets 6..7 (made_with, dialect sqlite) were made with gamma = 0.95, but option gamma = 0.9'
if [ $status -eq 1 ] && [ "$zeros" -eq 3 ] && grep -q '^0|0|0|0|0|0|0|0|0|20000|$' "$LOG/shard.out" \
   && [ "$(grep -c '^│ [0-9] ' "$LOG/shard.out")" -eq 10 ] \
   && [ "$(grep -c '^check: ' "$LOG/shard.out")" -eq 2 ] \
   && grep -q '^0|0|0|0|0|0|0|0|1|20000|buckets 6\.\.7: {"gamma":0\.94999999999999996,' "$LOG/shard.out" \
   && [ "$(grep -c 'error' "$LOG/shard.out")" -eq 1 ] && grep -qF "$refused" "$LOG/shard.out"; then
  echo "ok sql/shard_release.sql: 3 shard checks 0, merge check 0 with m = 20000, 10 values, statistics = dp_fv_stats, seeded release = dp_lsw; a shard at gamma 0.95 flagged by the merge check and refused by dp_lsw_from_stats"
else
  echo "not ok sql/shard_release.sql (status $status)"
  sed 's/^/# /' "$LOG/shard.out" | tail -30
fi >"$LOG/shard"
count shard_release.sql "$LOG/shard" 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
