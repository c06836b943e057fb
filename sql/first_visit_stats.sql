-- sql/first_visit_stats.sql: the per-state statistics that DP-LSW and
-- DP-LSL need, in portable SQL (window functions; no dprl needed).  Runs
-- on SQLite >= 3.25 (with math functions), PostgreSQL, DuckDB, Spark SQL.
--
-- Input:  a table steps(episode, t, state, reward), one row per step.
-- Output: one row per visited state: (state, visits, return_sum) where
--   visits     = number of episodes that visit the state (|X_s|)
--   return_sum = sum over those episodes of the first-visit return,
-- with exactly dprl's clamping: rewards clamped to [0, rmax], returns
-- discounted by step position (gaps in t do not count), first-visit
-- returns clamped to [0, fmax] when fmax is given.  NOT private: feed the
-- result to dp_lsw_from_stats / dp_lsl_from_stats with "episodes": m.
--
-- Set the public parameters in the params row (fmax NULL = no fmax).
-- Numerics: G_t is computed as sum_{u>=t} gamma^u r_u / gamma^t, which
-- needs gamma^L well above the smallest double: L * log10(1/gamma) < 300
-- for an episode of L steps (L < 68,000 at gamma = 0.99; L < 990 at 0.5).
WITH params AS (
  SELECT 0.99 AS gamma, 1.0 AS rmax, CAST(NULL AS DOUBLE PRECISION) AS fmax -- PARAMS
),
ordered AS (
  SELECT s.episode, s.t, s.state,
         CASE WHEN s.reward < 0 THEN 0.0
              WHEN s.reward > p.rmax THEN p.rmax
              ELSE s.reward END AS r,
         row_number() OVER (PARTITION BY s.episode ORDER BY s.t) - 1 AS pos,
         row_number() OVER (PARTITION BY s.episode, s.state ORDER BY s.t) AS visit
  FROM steps s CROSS JOIN params p
),
returns AS (
  SELECT o.episode, o.state, o.visit,
         CASE WHEN p.gamma = 0 THEN o.r
              ELSE sum(o.r * power(p.gamma, o.pos)) OVER (
                     PARTITION BY o.episode ORDER BY o.pos DESC
                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                   / power(p.gamma, o.pos)
         END AS g,
         p.fmax
  FROM ordered o CROSS JOIN params p
)
SELECT state,
       count(*) AS visits,
       sum(CASE WHEN fmax IS NOT NULL AND g > fmax THEN fmax ELSE g END) AS return_sum
FROM returns
WHERE visit = 1
GROUP BY state
ORDER BY state;
