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
# (tests/engines/demo_checks.sh says what a correct run prints)
if why=$(sh tests/engines/demo_checks.sh pg "$LOG/demo.out" $status); then
  echo "ok sql/scale_out_pg.sh: 2 postgres_fdw shards, checks 0, statistics = dp_fv_stats, release = dp_lsw on the whole log (with 12 stays of 3,000 steps), a shard at gamma 0.95 refused"
else
  echo "not ok sql/scale_out_pg.sh (status $status): $why"
  sed 's/^/# /' "$LOG/demo.out" | tail -30
fi >"$LOG/demo"
count scale_out_pg.sh "$LOG/demo" 0

# make scale-out-ch, in a quick form: 3 ClickHouse nodes, 2*10^5 steps; its
# checks (statistics = dp_fv_stats, release = dp_lsw) make it exit non-zero
STEPS=200000 REPEAT=1 sh sql/scale_out_ch.sh >"$LOG/ch.out" 2>&1
status=$?
if [ "$status" -eq 0 ] && grep -q "^statistics step:" "$LOG/ch.out"; then
  echo "ok sql/scale_out_ch.sh (make scale-out-ch) at 2*10^5 steps on 3 nodes: its checks pass"
else
  echo "not ok sql/scale_out_ch.sh (make scale-out-ch) at 2*10^5 steps (status $status)"
  sed 's/^/# /' "$LOG/ch.out" | tail -30
fi >"$LOG/ch"
count scale_out_ch.sh "$LOG/ch" 0

# the sqlite3-shell version
# It ends with the release refused for a shard made at gamma = 0.95: that
# error, and no other, makes the shell exit 1 (tests/engines/demo_checks.sh).
"$SQLITE3" :memory: <sql/shard_release.sql >"$LOG/shard.out" 2>&1
status=$?
if why=$(sh tests/engines/demo_checks.sh shard "$LOG/shard.out" $status); then
  echo "ok sql/shard_release.sql: 3 shard checks 0, merge check 0 with m = 20012 (with 12 stays of 3,000 steps), 10 values, statistics = dp_fv_stats, seeded release = dp_lsw; a shard at gamma 0.95 flagged by the merge check and refused by dp_lsw_from_stats"
else
  echo "not ok sql/shard_release.sql (status $status): $why"
  sed 's/^/# /' "$LOG/shard.out" | tail -30
fi >"$LOG/shard"
count shard_release.sql "$LOG/shard" 0

# the tests of the tests: each formula of sql/src mutated in a copy must make
# a check above fail (tests/engines/mutations.py; about 4 minutes)
"$PYTHON" tests/engines/mutations.py >"$LOG/mutations" 2>&1
count mutations.py "$LOG/mutations" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
