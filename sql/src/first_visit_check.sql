-- first_visit_check.sql: what dprl would refuse in the steps, counted.
-- Every column must be 0 before the statistics of first_visit_stats.sql
-- are trusted (that query also returns NULL sums when one is not).
--
-- Input: the same steps(episode, t, state, reward) and dprl_params as
-- first_visit_stats.sql.  Output: one row,
--   bad_params          1 when dprl would refuse the parameters
--   null_episode, null_t, null_state, null_reward   NULL values
--   nonfinite_reward    NaN, +Infinity or -Infinity
--   non_integer_t, non_integer_state   not a (finite) integer
--   state_out_of_range  state outside 0..n_states-1
--   duplicate_steps     a second step with the same (episode, t)
--   outside_buckets     episodes whose bucket is outside bucket_lo..bucket_hi
-- A column's type is not checked: in SQLite, where any column holds any
-- value, dprl also refuses text or blob rewards, t and states that this
-- query may count as numbers; declare the table STRICT or check typeof().
WITH
@include params.sql
@include rows.sql
report AS (
  SELECT 1 - b.ok AS bad_params,
         p.null_episode, p.null_t, p.null_state, p.null_reward, p.nonfinite_reward,
         p.non_integer_t, p.non_integer_state, p.state_out_of_range, p.duplicate_steps,
         p.outside_buckets
  FROM problems p CROSS JOIN bounds b
)
SELECT * FROM report;
