#!/bin/sh
# tests/engines/demo_checks.sh pg|shard OUTPUT STATUS: exit 0 when OUTPUT,
# the output of sql/scale_out_pg.sh (pg) or of `sqlite3 :memory: <
# sql/shard_release.sql` (shard) that exited with STATUS, is what a correct
# run prints; otherwise print what is wrong and exit 1.  tests/engines/run.sh
# judges the demos with it, and tests/engines/mutations.py judges the same
# demos run on mutated copies of the SQL (which must fail it).
set -u
what=$1
out=$2
status=$3
bad() { echo "$what: $*"; exit 1; }

case "$what" in
  pg)
    # its own checks make it exit non-zero
    [ "$status" -eq 0 ] || bad "exit status $status: $(grep '^scale_out_pg: \|ERROR' "$out" | head -1)"
    grep -q "^check: every state's visits" "$out" || bad "no 'check: every state's visits' line"
    grep -q "^check: with seed 7" "$out" || bad "no 'check: with seed 7' line"
    grep -q "^check: a shard made at gamma = 0.95 is named" "$out" \
      || bad "no 'check: a shard made at gamma = 0.95' line"
    ;;
  shard)
    # It ends with the release refused for a shard made at gamma = 0.95:
    # that error, and no other, makes the shell exit 1.
    refused='dp_lsw_from_stats: the statistics of buckets 6..7 (made_with, dialect sqlite) were made with gamma = 0.95, but option gamma = 0.9'
    failed=$(grep -o 'CHECK constraint failed: [a-z_]*' "$out" | head -1)
    [ -z "$failed" ] || bad "$failed"
    [ "$status" -eq 1 ] || bad "exit status $status, not 1 (the refusal at the end)"
    [ "$(grep -c '^shard [012]|0|0|0|0|0|0|0|0|0|0|0$' "$out")" -eq 3 ] \
      || bad "not 3 shard checks all 0"
    grep -q '^0|0|0|0|0|0|0|0|0|20012|$' "$out" || bad "merge check not 0 with m = 20012"
    [ "$(grep -c '^│ [0-9] ' "$out")" -eq 10 ] || bad "not 10 released values"
    [ "$(grep -c '^check: ' "$out")" -eq 2 ] || bad "not 2 'check:' lines"
    grep -q '^0|0|0|0|0|0|0|0|1|20012|buckets 6\.\.7: {"gamma":0\.94999999999999996,' "$out" \
      || bad "the shard at gamma 0.95 not flagged by the merge check"
    [ "$(grep -c 'error' "$out")" -eq 1 ] || bad "not exactly one error"
    grep -qF "$refused" "$out" || bad "the shard at gamma 0.95 not refused by dp_lsw_from_stats"
    ;;
  *)
    echo "usage: $0 pg|shard OUTPUT STATUS" >&2
    exit 2
    ;;
esac
exit 0
