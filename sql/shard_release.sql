-- sql/shard_release.sql: one private release from several database files,
-- in the sqlite3 shell, with the per-engine SQL of sql/sqlite/ run as is.
-- Run from the repository root (needs ./dprl.so: `make` builds it):
--   sqlite3 :memory: < sql/shard_release.sql
-- 1. Split the sample ICU log (samples/clinic.sql: 20,000 short stays, and
--    samples/long_episodes.sql: 12 stays of 3,000 steps, whose returns
--    cross the blocks of first_visit_stats.sql) into 3 shard files by
--    bucket = hash(patient) mod 8 (sql/sqlite/episode_bucket.sql): buckets
--    0..2, 3..5 and 6..7, as sites or years would hold them; no patient is
--    in two shards.
-- 2. In each shard, the check (all 0) and the per-state statistics
--    (first_visit_check.sql, first_visit_stats.sql): the per-episode work,
--    done where the data is.
-- 3. The merge check on the union: the ranges partition 0..7, every shard
--    was made with the same parameters (made_with), m = 20,012.
-- 4. One release from the union: only the per-state rows left the shards;
--    dprl compares each row's made_with with its options.
-- 5. Checks against the whole log: the statistics (dp_fv_stats) and the
--    same release seeded (dp_lsw: noisy and exact values); the script
--    stops if one fails.
-- 6. A shard recomputed at gamma = 0.95: the merge check names it, and the
--    release from it is refused with a message naming gamma and its buckets.
.load ./dprl
.bail on
.read samples/clinic.sql
.read samples/long_episodes.sql
CREATE TEMP TABLE dprl_params(gamma REAL, rmin REAL, rmax REAL, fmin REAL, fmax REAL,
                              n_states INTEGER, max_states INTEGER, buckets INTEGER,
                              bucket_lo INTEGER, bucket_hi INTEGER);
INSERT INTO dprl_params VALUES (0.9, 0, 1, NULL, 9, 10, NULL, 8, 0, 7);
-- The files are single SELECTs; the shell makes views of them.
.read '|{ echo "CREATE TEMP VIEW episode_bucket AS"; cat sql/sqlite/episode_bucket.sql; }'
.read '|{ echo "CREATE TEMP VIEW shard_check AS"; cat sql/sqlite/first_visit_check.sql; }'
.read '|{ echo "CREATE TEMP VIEW shard_stats_of_steps AS"; cat sql/sqlite/first_visit_stats.sql; }'
CREATE TEMP TABLE bucket_of AS SELECT * FROM episode_bucket;

ATTACH 'build/shard0.db' AS s0;
ATTACH 'build/shard1.db' AS s1;
ATTACH 'build/shard2.db' AS s2;
DROP TABLE IF EXISTS s0.steps; DROP TABLE IF EXISTS s1.steps; DROP TABLE IF EXISTS s2.steps;
DROP TABLE IF EXISTS s0.stats; DROP TABLE IF EXISTS s1.stats; DROP TABLE IF EXISTS s2.stats;
CREATE TABLE s0.steps AS SELECT s.* FROM main.steps s JOIN bucket_of b ON b.episode = s.episode
  WHERE b.bucket BETWEEN 0 AND 2;
CREATE TABLE s1.steps AS SELECT s.* FROM main.steps s JOIN bucket_of b ON b.episode = s.episode
  WHERE b.bucket BETWEEN 3 AND 5;
CREATE TABLE s2.steps AS SELECT s.* FROM main.steps s JOIN bucket_of b ON b.episode = s.episode
  WHERE b.bucket BETWEEN 6 AND 7;

-- Per shard (the views read "steps": a TEMP view of that shard's table).
.mode list
.headers on
CREATE TEMP VIEW steps AS SELECT * FROM s0.steps;
UPDATE dprl_params SET bucket_lo = 0, bucket_hi = 2;
SELECT 'shard 0' AS shard, * FROM shard_check;
CREATE TABLE s0.stats AS SELECT * FROM shard_stats_of_steps;
DROP VIEW temp.steps;
CREATE TEMP VIEW steps AS SELECT * FROM s1.steps;
UPDATE dprl_params SET bucket_lo = 3, bucket_hi = 5;
SELECT 'shard 1' AS shard, * FROM shard_check;
CREATE TABLE s1.stats AS SELECT * FROM shard_stats_of_steps;
DROP VIEW temp.steps;
CREATE TEMP VIEW steps AS SELECT * FROM s2.steps;
UPDATE dprl_params SET bucket_lo = 6, bucket_hi = 7;
SELECT 'shard 2' AS shard, * FROM shard_check;
CREATE TABLE s2.stats AS SELECT * FROM shard_stats_of_steps;
DROP VIEW temp.steps;

-- The merge check: every column 0 but episodes (m, public).
CREATE TEMP VIEW shard_stats AS
  SELECT * FROM s0.stats UNION ALL SELECT * FROM s1.stats UNION ALL SELECT * FROM s2.stats;
.read sql/sqlite/stats_merge_check.sql

-- The release: m = the sum of the shards' episode counts; each row's
-- made_with (gamma, the bounds, n_states, max_states) must be the options',
-- and the bucket ranges must partition 0..7 (the 8-argument form).
.mode box
SELECT key AS state, round(value, 3) AS private_value
FROM json_each((
  SELECT dp_lsw_from_stats(state, visits, return_sum, buckets, bucket_lo, bucket_hi, made_with,
           json_set('{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5, "buckets": 8}',
                    '$.episodes',
                    (SELECT sum(episodes)
                     FROM (SELECT DISTINCT bucket_lo, bucket_hi, episodes FROM shard_stats))))
  FROM shard_stats), '$.values');

-- The checks: the script stops with an error naming the one that fails.
-- The merged statistics against dp_fv_stats over the whole log (visits
-- exactly; return sums to (2 visits + 16) 2^-53 of the sum, the bound of
-- adding the same first-visit returns in plain double arithmetic in
-- another order: at most 4.5e-12 relative here, so 1e-11 fails), and the
-- same release seeded (diagnostic) against dp_lsw over the whole log.
CREATE TEMP TABLE check_statistics(
  ok INTEGER CONSTRAINT merged_statistics_differ_from_dp_fv_stats_on_the_whole_log CHECK (ok = 1));
INSERT INTO check_statistics
WITH whole AS (
  SELECT e.value ->> 0 AS state, e.value ->> 1 AS visits, e.value ->> 2 AS return_sum
  FROM (SELECT dp_fv_stats(episode, t, state, reward,
                           '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9}') AS j
        FROM main.steps) AS x,
       json_each(x.j, '$.states') AS e),
merged AS (
  SELECT state, sum(visits) AS visits, sum(return_sum) AS return_sum
  FROM shard_stats GROUP BY state HAVING sum(visits) > 0)
SELECT count(*) = 0 FROM whole w FULL JOIN merged m ON m.state = w.state
WHERE w.state IS NULL OR m.state IS NULL OR m.visits <> w.visits
   OR abs(m.return_sum - w.return_sum)
      > (2 * w.visits + 16) * 1.1102230246251565e-16 * abs(w.return_sum);
CREATE TEMP TABLE check_release(
  ok INTEGER CONSTRAINT seeded_release_differs_from_dp_lsw_on_the_whole_log CHECK (ok = 1));
INSERT INTO check_release
SELECT json_extract(a, '$.theta') = json_extract(b, '$.theta')
       AND json_extract(a, '$.visits') = json_extract(b, '$.visits')
       AND NOT EXISTS (
         SELECT 1 FROM json_each(a, '$.theta_exact') x JOIN json_each(b, '$.theta_exact') y
                       ON x.key = y.key
         WHERE abs(x.value - y.value)
               > (2 * json_extract(b, '$.visits[' || x.key || ']') + 16)
                 * 1.1102230246251565e-16 * abs(y.value))
       AND json_array_length(a, '$.theta_exact') = 10
FROM (SELECT (SELECT dp_lsw_from_stats(state, visits, return_sum, made_with,
                json_set('{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5, "release": "diagnostic", "seed": 7}',
                         '$.episodes', 20012))
              FROM shard_stats) AS a,
             (SELECT dp_lsw(episode, t, state, reward,
                '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5, "release": "diagnostic", "seed": 7}')
              FROM main.steps) AS b);
.mode list
.headers off
SELECT 'check: every state''s visits and return sum (to the rounding bound of plain summation) equal dp_fv_stats over the whole log';
SELECT 'check: with seed 7 (diagnostic), the release from the shards equals dp_lsw over the whole log (noisy theta exactly, exact theta to the same bound)';

-- A shard made with other parameters: shard 2 again, at gamma = 0.95.
CREATE TEMP VIEW steps AS SELECT * FROM s2.steps;
UPDATE dprl_params SET gamma = 0.95, bucket_lo = 6, bucket_hi = 7;
CREATE TEMP TABLE s2_other AS SELECT * FROM shard_stats_of_steps;
DROP VIEW temp.steps;
DROP VIEW shard_stats;
CREATE TEMP VIEW shard_stats AS
  SELECT * FROM s0.stats UNION ALL SELECT * FROM s1.stats UNION ALL SELECT * FROM s2_other;
.mode list
.headers on
.read sql/sqlite/stats_merge_check.sql
.headers off
.bail off
SELECT dp_lsw_from_stats(state, visits, return_sum, buckets, bucket_lo, bucket_hi, made_with,
         '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5, "buckets": 8, "episodes": 20012}')
FROM shard_stats;
.bail on
