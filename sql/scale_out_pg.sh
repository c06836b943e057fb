#!/bin/sh
# sql/scale_out_pg.sh: one private release from a sharded PostgreSQL log,
# end to end on this machine (`make scale-out-demo` installs what it needs,
# builds dprl.so and runs this).
#
#   1. Three PostgreSQL servers on 127.0.0.1: a coordinator and two shards.
#   2. The ICU sample (samples/clinic.sql, 20,000 patients, and
#      samples/long_episodes.sql, 12 stays of 3,000 steps whose returns cross
#      the blocks of first_visit_stats.sql) is loaded on the coordinator
#      and routed, by bucket = hash(patient id) mod 8, into a partitioned
#      table whose two partitions are postgres_fdw foreign tables: buckets
#      0..3 live on shard A, 4..7 on shard B.  The coordinator keeps no step.
#   3. Each shard computes its own statistics and its own check with
#      sql/postgres/first_visit_stats.sql and first_visit_check.sql (views
#      on the shard); the coordinator reads them through foreign tables, so
#      the window functions run on the shards (EXPLAIN VERBOSE shows the
#      remote SQL) and only per-state rows cross the network.
#   4. The coordinator reads the union of the shards' statistics once (the
#      servers are async_capable: both shards compute at the same time),
#      into a table, and runs sql/postgres/stats_merge_check.sql on it (the
#      bucket ranges partition 0..7, both shards made with the same
#      parameters, m = 20,012).
#   5. Only the per-state table moves into SQLite, where dprl makes one
#      release (dp_lsw_from_stats, which compares each row's made_with
#      with its options).  As checks, every state's visits and return sum
#      equal dp_fv_stats over the whole log in SQLite, and the same release
#      with a seed (diagnostic) equals dp_lsw there (noisy values exactly,
#      exact values to the error bound of plain summation).
#   6. Shard B's statistics made at gamma = 0.95 instead: the merge check
#      names the shard, and dprl refuses the release naming gamma.
# Exits non-zero if any step or check fails.
#
# COPIES=N makes the log N copies of the ICU sample (patient ids offset by
# 100,000 a copy) and the 12 long stays: COPIES=30 is 9,983,340 steps.  The
# shards run with work_mem 64MB and jit off (ALTER SYSTEM below; measured
# in docs/scaling-out.md); WORK_MEM=... and JIT=on override them.
# awk, printf and gnuplot write and read numbers in the "C" locale,
# whatever locale the caller runs in.
export LC_ALL=C
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
K=8
COPIES=${COPIES:-1}
WORK_MEM=${WORK_MEM:-64MB}
JIT=${JIT:-off}
case "$COPIES" in ''|*[!0-9]*|0) echo "scale_out_pg: COPIES must be a whole number >= 1, got '$COPIES'" >&2; exit 2 ;; esac
case "$JIT" in on|off) ;; *) echo "scale_out_pg: JIT must be on or off, got '$JIT'" >&2; exit 2 ;; esac
case "$WORK_MEM" in *[!0-9kMGB]*|'') echo "scale_out_pg: WORK_MEM must be like 64MB, got '$WORK_MEM'" >&2; exit 2 ;; esac
OPTS='{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5}'
STATS_OPTS='{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9}'

[ -f ./dprl.so ] || { echo "scale_out_pg: ./dprl.so is missing: run make first" >&2; exit 1; }
command -v psql >/dev/null || { echo "scale_out_pg: psql is missing: apt-get install postgresql" >&2; exit 1; }

TMP=$(mktemp -d)
STARTED=""
cleanup() {
  for d in $STARTED; do sh "$ROOT/sql/pg_local.sh" stop "$d" || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

start() { # start NAME: prints the port
  p=$(sh sql/pg_local.sh port)
  sh sql/pg_local.sh start "$TMP/$1" "$p"
  STARTED="$STARTED $TMP/$1"
  eval "PORT_$1=$p"
}
start coord
start shard_a
start shard_b
echo "1. coordinator on 127.0.0.1:$PORT_coord, shard A on :$PORT_shard_a, shard B on :$PORT_shard_b"

now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{ printf "%.1f", $1 - $2 }'; }

on() { # on NAME [psql args]: run psql on that server
  eval "port=\$PORT_$1"
  shift
  psql -h 127.0.0.1 -p "$port" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 "$@"
}

# The shards: the settings the statistics need (the DISTINCT and the window
# sorts of 10^7 steps spill to disk at the default 4MB of work_mem, and JIT
# compiling the 63-term bucket hash costs more than it saves), a steps table
# (with the bucket it was routed by), the public parameters with the
# shard's bucket range, and the two views.
for name in a b; do
  on "shard_$name" -c "ALTER SYSTEM SET work_mem = '$WORK_MEM'" -c "ALTER SYSTEM SET jit = $JIT" \
    -c "SELECT pg_reload_conf()" >/dev/null
done
for s in a:0:3 b:4:7; do
  name=${s%%:*}; range=${s#*:}; lo=${range%%:*}; hi=${range#*:}
  {
    echo "CREATE TABLE steps(episode bigint NOT NULL, t bigint NOT NULL, state int NOT NULL,"
    echo "  reward double precision NOT NULL, bucket int NOT NULL, PRIMARY KEY (episode, t));"
    echo "CREATE TABLE dprl_params(gamma double precision, rmin double precision,"
    echo "  rmax double precision, fmin double precision, fmax double precision,"
    echo "  n_states bigint, max_states bigint, buckets bigint, bucket_lo bigint,"
    echo "  bucket_hi bigint);"
    echo "INSERT INTO dprl_params VALUES (0.9, 0, 1, NULL, 9, 10, NULL, $K, $lo, $hi);"
    echo "CREATE VIEW shard_stats AS"
    cat sql/postgres/first_visit_stats.sql
    echo "CREATE VIEW shard_check AS"
    cat sql/postgres/first_visit_check.sql
    # the same statistics made at gamma = 0.95 (a view in schema other,
    # bound to other.dprl_params and public.steps)
    echo "CREATE SCHEMA other;"
    echo "CREATE TABLE other.dprl_params AS SELECT * FROM dprl_params;"
    echo "UPDATE other.dprl_params SET gamma = 0.95;"
    echo "SET search_path = other, public;"
    echo "CREATE VIEW other.shard_stats AS"
    cat sql/postgres/first_visit_stats.sql
    echo "RESET search_path;"
  } | on "shard_$name"
done

# The coordinator: the log arrives (generated by SQLite from the sample),
# each episode gets its bucket (sql/postgres/episode_bucket.sql), and the
# partitioned table routes the rows to the shards.
sqlite3 -bail "$TMP/log.db" ".read samples/clinic.sql" ".read samples/long_episodes.sql" \
  "CREATE TABLE one AS SELECT * FROM steps" \
  "INSERT INTO steps SELECT episode + 100000 * c.value, t, state, action, reward, expert
   FROM one, generate_series(1, $COPIES - 1) c"
sqlite3 -bail -csv "$TMP/log.db" "SELECT episode, t, state, reward FROM steps ORDER BY episode, t" \
  >"$TMP/log.csv"
t_load=$(now)
{
  echo "CREATE EXTENSION postgres_fdw;"
  for name in a b; do
    eval "port=\$PORT_shard_$name"
    echo "CREATE SERVER shard_$name FOREIGN DATA WRAPPER postgres_fdw"
    echo "  OPTIONS (host '127.0.0.1', port '$port', dbname 'postgres', batch_size '1000',"
    echo "           async_capable 'true');"
    echo "CREATE USER MAPPING FOR postgres SERVER shard_$name OPTIONS (user 'postgres');"
  done
  echo "CREATE TABLE sharded(episode bigint, t bigint, state int, reward double precision,"
  echo "  bucket int) PARTITION BY RANGE (bucket);"
  echo "CREATE FOREIGN TABLE sharded_a PARTITION OF sharded FOR VALUES FROM (0) TO (4)"
  echo "  SERVER shard_a OPTIONS (table_name 'steps');"
  echo "CREATE FOREIGN TABLE sharded_b PARTITION OF sharded FOR VALUES FROM (4) TO ($K)"
  echo "  SERVER shard_b OPTIONS (table_name 'steps');"
  echo "CREATE TEMP TABLE steps(episode bigint, t bigint, state int, reward double precision);"
  printf "%s\n" "\\copy steps FROM '$TMP/log.csv' WITH (FORMAT csv)"
  echo "CREATE TEMP TABLE dprl_params AS SELECT 0.9 AS gamma, 0 AS rmin, 1 AS rmax,"
  echo "  NULL AS fmin, 9 AS fmax, 10 AS n_states, NULL::bigint AS max_states, $K AS buckets,"
  echo "  0 AS bucket_lo, $((K - 1)) AS bucket_hi;"
  echo "CREATE TEMP VIEW episode_bucket AS"
  cat sql/postgres/episode_bucket.sql
  echo "INSERT INTO sharded SELECT s.episode, s.t, s.state, s.reward, b.bucket"
  echo "  FROM steps s JOIN episode_bucket b ON b.episode = s.episode;"
  # the statistics and checks of the shards, as foreign tables
  for name in a b; do
    for v in stats check; do
      echo "CREATE FOREIGN TABLE shard_${v}_$name ("
      if [ $v = stats ]; then
        echo "  state bigint, visits bigint, return_sum double precision, buckets bigint,"
        echo "  bucket_lo bigint, bucket_hi bigint, episodes bigint, max_states bigint,"
        echo "  made_with text)"
      else
        echo "  bad_params int, null_episode bigint, null_t bigint, null_state bigint,"
        echo "  null_reward bigint, nonfinite_reward bigint, non_integer_t bigint,"
        echo "  non_integer_state bigint, state_out_of_range bigint, duplicate_steps bigint,"
        echo "  outside_buckets bigint)"
      fi
      echo "  SERVER shard_$name OPTIONS (table_name 'shard_$v');"
    done
  done
  echo "CREATE FOREIGN TABLE shard_stats_b_other (state bigint, visits bigint,"
  echo "  return_sum double precision, buckets bigint, bucket_lo bigint, bucket_hi bigint,"
  echo "  episodes bigint, max_states bigint, made_with text)"
  echo "  SERVER shard_b OPTIONS (schema_name 'other', table_name 'shard_stats');"
  # async_capable: the Append over the two foreign tables asks both shards
  # at once, so they compute their statistics in parallel
  echo "CREATE VIEW shard_stats_remote AS"
  echo "  SELECT * FROM shard_stats_a UNION ALL SELECT * FROM shard_stats_b;"
} | on coord
for name in a b; do on "shard_$name" -c "ANALYZE steps"; done
echo "2. steps per shard (the coordinator keeps none; loaded and routed in $(since "$t_load") s):"
on coord -c "SELECT tableoid::regclass AS partition, min(bucket) AS bucket_lo, max(bucket) AS bucket_hi,
                    count(DISTINCT episode) AS episodes, count(*) AS steps
             FROM sharded GROUP BY 1 ORDER BY 1"

echo "3. each shard's check (every count must be 0):"
t0=$(now)
CHECKS=$(on coord -At -c "SELECT * FROM shard_check_a UNION ALL SELECT * FROM shard_check_b")
echo "$CHECKS"
[ "$CHECKS" = "0|0|0|0|0|0|0|0|0|0|0
0|0|0|0|0|0|0|0|0|0|0" ] || { echo "scale_out_pg: a shard's check failed" >&2; exit 1; }
echo "   (both shards' checks: $(since "$t0") s)"
echo "   the statistics run on the shards, both at once; the coordinator's plan:"
on coord -At -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM shard_stats_remote" | sed 's/^/   /'
# Read once: every later step (the merge check, the copy) reads this table,
# so no shard computes its statistics twice.
t0=$(now)
on coord -c "CREATE TABLE shard_stats AS SELECT * FROM shard_stats_remote"
echo "   the statistics of both shards, read once: $(since "$t0") s"

echo "4. merge check on the coordinator (all 0 but m; made_with_differs empty):"
MERGE=$(on coord -At -F ' ' -f sql/postgres/stats_merge_check.sql)
echo "   mixed_buckets bad_ranges overlapping missing_buckets duplicate_states episode_mismatch null_sums mixed_max_states mixed_made_with episodes made_with_differs"
echo "   $MERGE"
case "$MERGE" in
  "0 0 0 0 0 0 0 0 0 "*" ") M=${MERGE% }; M=${M##* } ;;
  *) echo "scale_out_pg: the merge check failed" >&2; exit 1 ;;
esac

on coord -c "\\copy (SELECT * FROM shard_stats ORDER BY bucket_lo, state) TO '$TMP/moved.csv' WITH (FORMAT csv)"
echo "5. moved to SQLite: $(wc -l <"$TMP/moved.csv") per-state rows (from $(wc -l <"$TMP/log.csv") steps), m = $M"
sqlite3 -bail "$TMP/release.db" <<EOF
.load ./dprl
CREATE TABLE moved(state INTEGER, visits INTEGER, return_sum REAL, buckets INTEGER,
                   bucket_lo INTEGER, bucket_hi INTEGER, episodes INTEGER, max_states INTEGER,
                   made_with TEXT);
.import --csv $TMP/moved.csv moved
UPDATE moved SET max_states = NULL WHERE max_states = '';  -- .import reads NULL as ''
.mode box
SELECT key AS state, round(value, 3) AS private_value
FROM json_each((SELECT dp_lsw_from_stats(state, visits, return_sum, buckets, bucket_lo,
                         bucket_hi, made_with, json_set('$OPTS', '\$.episodes', $M,
                                                        '\$.buckets', $K))
                FROM moved), '\$.values');
EOF

# The checks, against SQLite on the whole log: the moved statistics
# themselves (visits exactly; return sums to (2 visits + 16) 2^-53 of the
# sum: both sides add the same first-visit returns, each exact to a few
# ulps, in plain double arithmetic and in different orders, and a sum of n
# terms is within (n - 1) 2^-53 sum|F| of the exact one (Higham, Accuracy
# and Stability of Numerical Algorithms, 2002, section 4.2); returns are
# >= 0 here, so sum|F| is the sum.  At 20,012 patients that is at most
# 4.5e-12 relative, so a sum off by 1e-11 fails), then the same release,
# seeded and diagnostic, from both.
BAD=$(sqlite3 -bail "$TMP/release.db" <<EOF
.load ./dprl
ATTACH '$TMP/log.db' AS log;
WITH whole AS (
  SELECT e.value ->> 0 AS state, e.value ->> 1 AS visits, e.value ->> 2 AS return_sum
  FROM (SELECT dp_fv_stats(episode, t, state, reward, '$STATS_OPTS') AS j FROM log.steps) AS x,
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
  echo "check: every state's visits and return sum (to the rounding bound of plain summation) equal dp_fv_stats over the whole log"
else
  echo "scale_out_pg: $BAD states' statistics differ from dp_fv_stats over the whole log" >&2
  exit 1
fi

# The same release, seeded and diagnostic, from the moved statistics and
# from the whole log in SQLite.
SAME=$(sqlite3 -bail "$TMP/release.db" <<EOF
.load ./dprl
ATTACH '$TMP/log.db' AS log;
SELECT json_extract(a, '\$.theta') = json_extract(b, '\$.theta')
       AND json_extract(a, '\$.visits') = json_extract(b, '\$.visits')
       AND json_array_length(a, '\$.theta_exact') = 10
       AND NOT EXISTS (
         SELECT 1 FROM json_each(a, '\$.theta_exact') x JOIN json_each(b, '\$.theta_exact') y
                       ON x.key = y.key
         WHERE abs(x.value - y.value)
               > (2 * json_extract(b, '\$.visits[' || x.key || ']') + 16)
                 * 1.1102230246251565e-16 * abs(y.value))
FROM (SELECT (SELECT dp_lsw_from_stats(state, visits, return_sum, made_with,
                json_set('$OPTS', '\$.episodes', $M, '\$.release', 'diagnostic', '\$.seed', 7))
              FROM moved) AS a,
             (SELECT dp_lsw(episode, t, state, reward,
                json_set('$OPTS', '\$.release', 'diagnostic', '\$.seed', 7))
              FROM log.steps) AS b);
EOF
)
if [ "$SAME" = 1 ]; then
  echo "check: with seed 7 (diagnostic), the release from the moved statistics equals dp_lsw over the whole log (noisy theta exactly, exact theta to the same bound)"
else
  echo "scale_out_pg: the release from the shards differs from dp_lsw over the whole log" >&2
  exit 1
fi

echo "6. shard B's statistics made at gamma = 0.95: the merge check and dprl refuse them"
on coord -c "CREATE TABLE shard_stats_other AS
               SELECT * FROM shard_stats_a UNION ALL SELECT * FROM shard_stats_b_other"
DIFFERS=$(on coord -At -c "WITH shard_stats AS (SELECT * FROM shard_stats_other)
                           SELECT mixed_made_with || ' ' || made_with_differs FROM (
                           $(grep -v '^--' sql/postgres/stats_merge_check.sql | sed 's/;$//')) x")
echo "   merge check: mixed_made_with, made_with_differs = $DIFFERS"
case "$DIFFERS" in
  '1 buckets 4..7: {"gamma":0.95,'*) ;;
  *) echo "scale_out_pg: the merge check did not flag the shard made at gamma = 0.95" >&2; exit 1 ;;
esac
on coord -c "\\copy (SELECT * FROM shard_stats_other ORDER BY bucket_lo, state) TO '$TMP/other.csv' WITH (FORMAT csv)"
REFUSED=$(sqlite3 "$TMP/release.db" <<EOF 2>&1 || true
.load ./dprl
CREATE TABLE other AS SELECT * FROM moved WHERE 0;
.import --csv $TMP/other.csv other
SELECT dp_lsw_from_stats(state, visits, return_sum, buckets, bucket_lo, bucket_hi, made_with,
         json_set('$OPTS', '\$.episodes', $M, '\$.buckets', $K)) FROM other;
EOF
)
echo "   dprl: $REFUSED"
case "$REFUSED" in
  *"dp_lsw_from_stats: the statistics of buckets 4..7 (made_with, dialect postgres) were made with gamma = 0.95, but option gamma = 0.9"*)
    echo "check: a shard made at gamma = 0.95 is named by the merge check and refused by dp_lsw_from_stats" ;;
  *) echo "scale_out_pg: the release from a shard made at gamma = 0.95 was not refused" >&2; exit 1 ;;
esac
