-- samples/q_learning/task.sql: logged transitions of the paper's task
-- (Wang & Hegde 2019, Appendix E.1), generated in plain SQL, reproducibly.
--
-- States are in [0, 1]; action 0 moves left, action 1 right, by a uniform
-- step in [0, 0.25], clipped to [0, 1]; the reward is 0.5 - |s' - 0.5|
-- (highest in the middle).  100 episodes of 50 steps under a uniformly
-- random behaviour policy: 5,000 transitions, as in the paper.
--
-- Random numbers come from the MINSTD generator x -> 48271 x mod (2^31 - 1)
-- in SQL integers (exact: products stay below 2^62), so every run builds
-- the same table.  Each transition uses three draws: d1 (action),
-- d2 (step size) and d3 (the next generator state, and a new episode's
-- start state).  48271^2 and 48271^3 mod (2^31 - 1) are 182605794 and
-- 1291394886.
DROP TABLE IF EXISTS transitions;
CREATE TABLE transitions(episode INTEGER, t INTEGER, s REAL, a INTEGER, r REAL, s_next REAL);
INSERT INTO transitions
WITH RECURSIVE walk(e, t, x, s) AS (
  SELECT 0, 0, 20190504, 20190504 * 1.0 / 2147483647
  UNION ALL
  SELECT CASE WHEN t < 49 THEN e ELSE e + 1 END,
         CASE WHEN t < 49 THEN t + 1 ELSE 0 END,
         x * 1291394886 % 2147483647,
         CASE WHEN t < 49
           THEN CASE WHEN (x * 48271 % 2147483647) * 2 / 2147483647 = 1
                  THEN min(1.0, s + 0.25 * (x * 182605794 % 2147483647) / 2147483647.0)
                  ELSE max(0.0, s - 0.25 * (x * 182605794 % 2147483647) / 2147483647.0) END
           ELSE (x * 1291394886 % 2147483647) / 2147483647.0 END
  FROM walk WHERE e < 99 OR t < 49
),
moved AS (
  SELECT e, t, s, (x * 48271 % 2147483647) * 2 / 2147483647 AS a,
         0.25 * (x * 182605794 % 2147483647) / 2147483647.0 AS u
  FROM walk
),
stepped AS (
  SELECT e, t, s, a, CASE a WHEN 1 THEN min(1.0, s + u) ELSE max(0.0, s - u) END AS s_next
  FROM moved
)
SELECT e, t, s, a, 0.5 - abs(s_next - 0.5), s_next FROM stepped;
