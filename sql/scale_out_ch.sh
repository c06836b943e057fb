#!/bin/sh
# sql/scale_out_ch.sh: one private release from 10^7 steps in a 3-node
# ClickHouse cluster, timed (`make scale-out-ch` installs what it needs,
# builds dprl.so and runs this).
#
#   1. Three clickhouse-server processes on 127.0.0.1 (sql/ch_local.sh).
#   2. 10^7 steps generated inside ClickHouse (numbers()) and inserted
#      through a Distributed table whose sharding key is the episode's
#      bucket (the hash of sql/clickhouse/episode_bucket.sql, K = 8):
#      buckets 0..2 on node 1, 3..5 on node 2, 6..7 on node 3.  Four
#      episodes of 500,000 steps, the rest episodes of 1..199 steps with
#      gaps in t; 20 states; rewards k/1024 in [-0.25, 1.25] (exact in
#      any text form, so SQLite reads the same doubles).
#   3. Each node computes its statistics with sql/clickhouse/
#      first_visit_stats.sql, unmodified (a view on each node), all three at
#      once through one Distributed table over the views: timed REPEAT
#      times (median), max_threads = THREADS.
#   4. Node 1 keeps the union (per-state rows only) and runs
#      stats_merge_check.sql on it: all 0, m = the episodes.
#   5. Only the per-state rows move into SQLite, where dprl releases
#      (dp_lsw_from_stats).  Checks: every state's visits and return sum
#      equal dp_fv_stats over all 10^7 steps in SQLite (return sums to
#      (2 visits + 16) 2^-53 of the sum, the rounding bound of adding the
#      same returns in another order: see sql/scale_out_pg.sh), and the
#      same release, seeded (diagnostic), equals dp_lsw there.
# Exits non-zero if any step or check fails.  STEPS=N changes 10^7;
# REPEAT=N times step 3 N times (default 3; the median is reported);
# THREADS=N is its max_threads (default 3).
# awk, printf and gnuplot write and read numbers in the "C" locale,
# whatever locale the caller runs in.
export LC_ALL=C
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STEPS=${STEPS:-10000000}
REPEAT=${REPEAT:-3}
THREADS=${THREADS:-3}
K=8
LONG=500000
OPTS='{"n_states": 20, "gamma": 0.99, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5}'
STATS_OPTS='{"n_states": 20, "gamma": 0.99, "rmin": 0, "rmax": 1}'

[ -f ./dprl.so ] || { echo "scale_out_ch: ./dprl.so is missing: run make first" >&2; exit 1; }
command -v clickhouse-client >/dev/null \
  || { echo "scale_out_ch: clickhouse-client is missing: apt-get install clickhouse-server clickhouse-client" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "scale_out_ch: sqlite3 is missing" >&2; exit 1; }

TMP=$(mktemp -d)
cleanup() {
  sh "$ROOT/sql/ch_local.sh" stop "$TMP/ch" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

sh sql/ch_local.sh start "$TMP/ch" 3 >"$TMP/ports"
P1=$(sed -n 1p "$TMP/ports"); P2=$(sed -n 2p "$TMP/ports"); P3=$(sed -n 3p "$TMP/ports")
echo "1. three ClickHouse servers on 127.0.0.1:$P1, :$P2, :$P3 (cluster dprl)"

on() { # on PORT [clickhouse-client args]
  port=$1; shift
  clickhouse-client --host 127.0.0.1 --port "$port" "$@"
}
now() { python3 -c 'import time; print(time.time())'; }
secs() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }

# the bucket of an episode: sql/gen_dialects.py's hash, as ClickHouse
BUCKET=$(python3 - <<'EOF'
import sys
sys.path.insert(0, "sql")
import gen_dialects
h = gen_dialects.bucket_hash_sql(ident="toString(episode)", length="lengthUTF8(toString(episode))", indent=" ")
print(f"(({h.replace('length(replace(', 'lengthUTF8(replaceAll(')}) % {8})")
EOF
)
KEY="multiIf($BUCKET <= 2, 0, $BUCKET <= 5, 1, 2)"

n=0
for range in 0:2 3:5 6:7; do
  n=$((n + 1)); lo=${range%%:*}; hi=${range#*:}
  port=$(sed -n "${n}p" "$TMP/ports")
  on "$port" -q "CREATE TABLE steps(episode Int64, t Int64, state Int64, reward Float64) ENGINE = Memory"
  on "$port" -q "CREATE TABLE dprl_params(gamma Float64, rmin Float64, rmax Float64,
    fmin Nullable(Float64), fmax Nullable(Float64), n_states Int64, max_states Nullable(Int64),
    buckets Int64, bucket_lo Int64, bucket_hi Int64) ENGINE = Memory"
  on "$port" -q "INSERT INTO dprl_params VALUES (0.99, 0, 1, NULL, NULL, 20, NULL, $K, $lo, $hi)"
  { echo "CREATE VIEW node_stats AS"; cat sql/clickhouse/first_visit_stats.sql; } | on "$port"
  { echo "CREATE VIEW node_check AS"; cat sql/clickhouse/first_visit_check.sql; } | on "$port"
done
on "$P1" -q "CREATE TABLE steps_all(episode Int64, t Int64, state Int64, reward Float64)
  ENGINE = Distributed(dprl, default, steps, $KEY)"
on "$P1" -q "CREATE TABLE stats_all(state Int64, visits Int64, return_sum Nullable(Float64),
  buckets Int64, bucket_lo Int64, bucket_hi Int64, episodes Int64, max_states Nullable(Int64),
  made_with Nullable(String)) ENGINE = Distributed(dprl, default, node_stats)"
on "$P1" -q "CREATE TABLE check_all(bad_params UInt8, null_episode UInt64, null_t UInt64,
  null_state UInt64, null_reward UInt64, nonfinite_reward UInt64, non_integer_t UInt64,
  non_integer_state UInt64, state_out_of_range UInt64, duplicate_steps UInt64,
  outside_buckets UInt64) ENGINE = Distributed(dprl, default, node_check)"

# 2. the steps: i < 4 x LONG: four long episodes; then chunks of 200 steps,
# each two episodes of len and 200 - len steps (len = 1..199), t with gaps
t0=$(now)
on "$P1" --insert_distributed_sync=1 -q "INSERT INTO steps_all
  SELECT if(i < 4 * $LONG, intDiv(i, $LONG),
            1000 + 2 * intDiv(i - 4 * $LONG, 200) + toInt64((i - 4 * $LONG) % 200 >= len)) AS episode,
         if(i < 4 * $LONG, i % $LONG,
            3 * if((i - 4 * $LONG) % 200 < len, (i - 4 * $LONG) % 200,
                   (i - 4 * $LONG) % 200 - len)) AS t,
         toInt64(cityHash64(i, 1) % 20) AS state,
         toFloat64(cityHash64(i, 2) % 1537) / 1024 - 0.25 AS reward
  FROM (SELECT toInt64(number) AS i, toInt64(1 + cityHash64(intDiv(number, 200), 3) % 199) AS len
        FROM numbers($STEPS))"
t1=$(now)
echo "2. $STEPS steps generated and routed in $(secs "$t0" "$t1") s; per node:"
n=0
for port in $P1 $P2 $P3; do
  n=$((n + 1))
  on "$port" -q "SELECT concat('   node $n: ', toString(sum(c)), ' steps, ', toString(count()),
                               ' episodes, longest ', toString(max(c))) FROM (SELECT episode, count() AS c FROM steps GROUP BY episode)"
done

echo "3. each node's check (every count must be 0):"
CHECKS=$(on "$P1" -q "SELECT * FROM check_all")
echo "$CHECKS" | sed 's/^/   /'
[ "$(echo "$CHECKS" | grep -c '^0	0	0	0	0	0	0	0	0	0	0$')" = 3 ] \
  || { echo "scale_out_ch: a node's check failed" >&2; exit 1; }
on "$P1" -q "CREATE TABLE shard_stats(state Int64, visits Int64, return_sum Nullable(Float64),
  buckets Int64, bucket_lo Int64, bucket_hi Int64, episodes Int64, max_states Nullable(Int64),
  made_with Nullable(String)) ENGINE = Memory"
# timed REPEAT times (the machine may be shared: the median is reported);
# max_threads = THREADS for the query and (passed on) on each node: with
# max_threads = 1 the initiator reads the nodes' streams one after another
TIMES=""
i=0
while [ $i -lt "$REPEAT" ]; do
  i=$((i + 1))
  on "$P1" -q "TRUNCATE TABLE shard_stats"
  t0=$(now)
  on "$P1" --max_threads="$THREADS" -q "INSERT INTO shard_stats SELECT * FROM stats_all"
  t1=$(now)
  TIMES="$TIMES $(secs "$t0" "$t1")"
done
STATS_SECONDS=$(python3 -c "import sys, statistics; print('%.2f' % statistics.median(map(float, sys.argv[1:])))" $TIMES)
echo "   the statistics of the 3 nodes, computed at once on the nodes (max_threads $THREADS):$TIMES s; median $STATS_SECONDS s"

echo "4. merge check on node 1 (all 0 but m):"
MERGE=$(on "$P1" --format TSV <sql/clickhouse/stats_merge_check.sql)
echo "   $MERGE"
M=$(echo "$MERGE" | cut -f10)
case "$MERGE" in
  "0	0	0	0	0	0	0	0	0	"*"	\\N") ;;
  *) echo "scale_out_ch: the merge check failed" >&2; exit 1 ;;
esac

on "$P1" --format TSV -q "SELECT state, visits, return_sum, made_with FROM shard_stats ORDER BY bucket_lo, state" >"$TMP/moved.tsv"
echo "5. moved to SQLite: $(wc -l <"$TMP/moved.tsv") per-state rows (from $STEPS steps), m = $M"
t0=$(now)
on "$P1" --format TSV -q "SELECT episode, t, state, reward FROM steps_all" >"$TMP/steps.tsv"
sqlite3 -bail "$TMP/all.db" <<EOF
CREATE TABLE moved(state INTEGER, visits INTEGER, return_sum REAL, made_with TEXT);
CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER, reward REAL);
.mode tabs
.import $TMP/moved.tsv moved
.import $TMP/steps.tsv steps
EOF
t1=$(now)
echo "   (and, for the checks only, the $STEPS steps copied into SQLite in $(secs "$t0" "$t1") s)"
sqlite3 -bail "$TMP/all.db" <<EOF
.load ./dprl
.mode box
SELECT key AS state, round(value, 3) AS private_value
FROM json_each((SELECT dp_lsw_from_stats(state, visits, return_sum, made_with,
                         json_set('$OPTS', '\$.episodes', $M)) FROM moved), '\$.values')
LIMIT 5;
EOF

BAD=$(sqlite3 -bail "$TMP/all.db" <<EOF
.load ./dprl
WITH whole AS (
  SELECT e.value ->> 0 AS state, e.value ->> 1 AS visits, e.value ->> 2 AS return_sum
  FROM (SELECT dp_fv_stats(episode, t, state, reward, '$STATS_OPTS') AS j FROM steps) AS x,
       json_each(x.j, '\$.states') AS e),
moved_sums AS (
  SELECT state, sum(visits) AS visits, sum(return_sum) AS return_sum
  FROM moved GROUP BY state HAVING sum(visits) > 0)
SELECT count(*) FROM whole w FULL JOIN moved_sums m ON m.state = w.state
WHERE w.state IS NULL OR m.state IS NULL OR m.visits <> w.visits
   OR abs(m.return_sum - w.return_sum)
      > (2 * w.visits + 16) * 1.1102230246251565e-16 * abs(w.return_sum);
EOF
)
if [ "$BAD" = 0 ]; then
  echo "check: every state's visits and return sum (to the rounding bound of plain summation) equal dp_fv_stats over all $STEPS steps"
else
  echo "scale_out_ch: $BAD states' statistics differ from dp_fv_stats over all the steps" >&2
  exit 1
fi
SAME=$(sqlite3 -bail "$TMP/all.db" <<EOF
.load ./dprl
SELECT json_extract(a, '\$.theta') = json_extract(b, '\$.theta')
       AND json_extract(a, '\$.visits') = json_extract(b, '\$.visits')
FROM (SELECT (SELECT dp_lsw_from_stats(state, visits, return_sum, made_with,
                json_set('$OPTS', '\$.episodes', $M, '\$.release', 'diagnostic', '\$.seed', 7))
              FROM moved) AS a,
             (SELECT dp_lsw(episode, t, state, reward,
                json_set('$OPTS', '\$.release', 'diagnostic', '\$.seed', 7))
              FROM steps) AS b);
EOF
)
if [ "$SAME" = 1 ]; then
  echo "check: with seed 7 (diagnostic), the release from the 3 nodes' statistics equals dp_lsw over all the steps"
else
  echo "scale_out_ch: the release from the nodes differs from dp_lsw over all the steps" >&2
  exit 1
fi
echo "statistics step: $STATS_SECONDS s for $STEPS steps on 3 nodes (median of$TIMES s)"
