-- sql/shard_release.sql: one private release from several database files.
-- Run from the repository root (needs ./dprl.so and the sample log):
--   sqlite3 :memory: < sql/shard_release.sql
-- 1. split the sample ICU log into 3 shard files by patient (as sites or
--    years would be), 2. in each shard compute its per-state statistics
--    (the per-episode work, done where the data is), 3. release once from
--    the union of the statistics: only N rows per shard leave a shard.
.load ./dprl
.bail on
.read samples/clinic.sql
ATTACH 'build/shard0.db' AS s0;
ATTACH 'build/shard1.db' AS s1;
ATTACH 'build/shard2.db' AS s2;
DROP TABLE IF EXISTS s0.steps; DROP TABLE IF EXISTS s1.steps; DROP TABLE IF EXISTS s2.steps;
CREATE TABLE s0.steps AS SELECT * FROM main.steps WHERE episode % 3 = 0;
CREATE TABLE s1.steps AS SELECT * FROM main.steps WHERE episode % 3 = 1;
CREATE TABLE s2.steps AS SELECT * FROM main.steps WHERE episode % 3 = 2;

-- Per shard: statistics with dp_first_visit (the portable SQL in
-- sql/first_visit_stats.sql computes the same on any engine).
DROP TABLE IF EXISTS s0.stats; DROP TABLE IF EXISTS s1.stats; DROP TABLE IF EXISTS s2.stats;
CREATE TABLE s0.stats AS SELECT state, count(*) AS visits, sum(first_visit_return) AS return_sum
  FROM dp_first_visit('SELECT episode, t, state, reward FROM s0.steps',
                      '{"n_states": 10, "gamma": 0.9, "fmax": 9}') GROUP BY state;
CREATE TABLE s1.stats AS SELECT state, count(*) AS visits, sum(first_visit_return) AS return_sum
  FROM dp_first_visit('SELECT episode, t, state, reward FROM s1.steps',
                      '{"n_states": 10, "gamma": 0.9, "fmax": 9}') GROUP BY state;
CREATE TABLE s2.stats AS SELECT state, count(*) AS visits, sum(first_visit_return) AS return_sum
  FROM dp_first_visit('SELECT episode, t, state, reward FROM s2.steps',
                      '{"n_states": 10, "gamma": 0.9, "fmax": 9}') GROUP BY state;

-- The release: m (the number of patients) is public, so it may be counted.
.mode box
SELECT key AS state, round(value, 3) AS private_value
FROM json_each((
  SELECT dp_lsw_from_stats(state, visits, return_sum,
           json_set('{"n_states": 10, "gamma": 0.9, "fmax": 9, "epsilon": 1, "delta": 1e-5}',
                    '$.episodes',
                    (SELECT count(*) FROM s0.steps WHERE t = 0) +
                    (SELECT count(*) FROM s1.steps WHERE t = 0) +
                    (SELECT count(*) FROM s2.steps WHERE t = 0)))
  FROM (SELECT * FROM s0.stats UNION ALL SELECT * FROM s1.stats
        UNION ALL SELECT * FROM s2.stats)), '$.values');
