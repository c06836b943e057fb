-- Each step: its position in the episode (0, 1, ... in t order), whether
-- it is the first visit of its state, whether its (episode, t) repeats.
marked AS (
  SELECT s.episode, s.t, s.state, CAST(s.reward AS DOUBLE PRECISION) AS reward,
         row_number() OVER (PARTITION BY s.episode ORDER BY s.t) - 1 AS pos,
         row_number() OVER (PARTITION BY s.episode, s.state ORDER BY s.t) AS nth_visit,
         CASE WHEN lag(s.t) OVER (PARTITION BY s.episode ORDER BY s.t) = s.t
              THEN 1 ELSE 0 END AS dup
  FROM steps s
),
@include buckets.sql
-- One row: the steps dprl would refuse, counted by reason (each test is
-- written so that NULL or NaN fails it), and the episodes.
problems AS (
  SELECT r.*, x.outside_buckets
  FROM (
    SELECT
      coalesce(sum(CASE WHEN m.episode IS NULL THEN 1 ELSE 0 END), 0) AS null_episode,
      coalesce(sum(CASE WHEN m.t IS NULL THEN 1 ELSE 0 END), 0) AS null_t,
      coalesce(sum(CASE WHEN m.state IS NULL THEN 1 ELSE 0 END), 0) AS null_state,
      coalesce(sum(CASE WHEN m.reward IS NULL THEN 1 ELSE 0 END), 0) AS null_reward,
      coalesce(sum(CASE WHEN m.reward IS NULL OR m.reward - m.reward = 0 THEN 0
                        ELSE 1 END), 0) AS nonfinite_reward,
      coalesce(sum(CASE WHEN m.t IS NULL OR (m.t - m.t = 0 AND m.t = floor(m.t)) THEN 0
                        ELSE 1 END), 0) AS non_integer_t,
      coalesce(sum(CASE WHEN m.state IS NULL OR (m.state - m.state = 0 AND m.state = floor(m.state))
                        THEN 0 ELSE 1 END), 0) AS non_integer_state,
      coalesce(sum(CASE WHEN m.state IS NULL OR (m.state >= 0 AND m.state < b.n_states) THEN 0
                        ELSE 1 END), 0) AS state_out_of_range,
      coalesce(sum(m.dup), 0) AS duplicate_steps,
      coalesce(sum(CASE WHEN m.episode IS NOT NULL AND m.t IS NOT NULL AND m.state IS NOT NULL
                         AND m.reward - m.reward = 0 AND m.t - m.t = 0 AND m.t = floor(m.t)
                         AND m.state - m.state = 0 AND m.state = floor(m.state)
                         AND m.state >= 0 AND m.state < b.n_states AND m.dup = 0
                        THEN 0 ELSE 1 END), 0) AS bad_rows,
      count(DISTINCT m.episode) AS episodes
    FROM marked m CROSS JOIN bounds b
  ) r CROSS JOIN (
    SELECT coalesce(sum(CASE WHEN eb.bucket >= b.bucket_lo AND eb.bucket <= b.bucket_hi
                             THEN 0 ELSE 1 END), 0) AS outside_buckets
    FROM episode_buckets eb CROSS JOIN bounds b
  ) x
),
