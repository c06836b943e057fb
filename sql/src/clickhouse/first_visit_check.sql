-- first_visit_check.sql for ClickHouse (18.16 and later): what dprl would
-- refuse in the steps, counted; every column must be 0 before the
-- statistics of first_visit_stats.sql are trusted.  The same inputs and
-- output as sql/src/first_visit_check.sql (read its header): bad_params,
-- null_episode, null_t, null_state, null_reward, nonfinite_reward,
-- non_integer_t, non_integer_state, state_out_of_range, duplicate_steps,
-- outside_buckets.
WITH
@include clickhouse/bounds.sql
SELECT toUInt8(1 - p_ok) AS bad_params,
       null_episode, null_t, null_state, null_reward, nonfinite_reward,
       non_integer_t, non_integer_state, state_out_of_range, duplicate_steps,
       outside_buckets
FROM (
@include clickhouse/problems.sql
)
