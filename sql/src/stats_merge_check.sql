-- stats_merge_check.sql: before one release from the statistics of several
-- shards, check that the shards' bucket ranges partition 0..buckets-1, so
-- that no episode can be counted in two shards (a patient counted twice
-- would break the privacy unit), and give m.
--
-- Input: a table shard_stats with the rows of every shard's
-- first_visit_stats.sql (state, visits, return_sum, buckets, bucket_lo,
-- bucket_hi, episodes, max_states), UNION ALL.  A shard = one (bucket_lo,
-- bucket_hi).
-- Output: one row; every column but episodes must be 0:
--   mixed_buckets     1 unless every row has the same buckets (K)
--   bad_ranges        shards whose range is not 0 <= lo <= hi < K
--   overlapping       shards whose range meets the range of a shard before it
--   missing_buckets   buckets of 0..K-1 that no shard covers
--   duplicate_states  rows beyond the first for a (shard, state): a
--                     shard's table added twice, or not grouped by state
--   episode_mismatch  shards whose rows disagree on episodes
--   null_sums         rows with a NULL return_sum (first_visit_check.sql
--                     on that shard says why)
--   mixed_max_states  1 unless every row has the same max_states (NULL, no
--                     bound, counting as one value): shards made with
--                     different contribution bounds
--   episodes          m = the sum of the shards' episodes: the
--                     "episodes" option of dp_lsw_from_stats
WITH
shards AS (
  SELECT buckets, bucket_lo, bucket_hi,
         min(episodes) AS episodes,
         CASE WHEN count(DISTINCT episodes) = 1 THEN 0 ELSE 1 END AS episode_mismatch,
         count(*) - count(DISTINCT state) AS duplicate_states,
         sum(CASE WHEN return_sum IS NULL THEN 1 ELSE 0 END) AS null_sums
  FROM shard_stats
  GROUP BY buckets, bucket_lo, bucket_hi
),
k AS (
  SELECT max(buckets) AS buckets,
         CASE WHEN count(DISTINCT buckets) = 1 THEN 0 ELSE 1 END AS mixed_buckets
  FROM shards
),
bounds AS (
  SELECT CASE WHEN count(DISTINCT coalesce(max_states, 0)) = 1 THEN 0 ELSE 1 END
           AS mixed_max_states
  FROM shard_stats
),
-- reach = the highest bucket covered by the shards before this one
ordered AS (
  SELECT s.bucket_lo, s.bucket_hi,
         coalesce(max(s.bucket_hi) OVER (ORDER BY s.bucket_lo, s.bucket_hi
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                  -1) AS reach
  FROM shards s
),
gaps AS (
  SELECT coalesce(sum(CASE WHEN o.bucket_lo <= o.reach THEN 1 ELSE 0 END), 0) AS overlapping,
         coalesce(sum(CASE WHEN o.bucket_lo > o.reach + 1 THEN o.bucket_lo - o.reach - 1
                           ELSE 0 END), 0) AS inner_gaps,
         max(o.bucket_hi) AS top
  FROM ordered o
),
totals AS (
  SELECT coalesce(sum(CASE WHEN s.bucket_lo >= 0 AND s.bucket_lo <= s.bucket_hi
                                AND s.bucket_hi < s.buckets THEN 0 ELSE 1 END), 0) AS bad_ranges,
         coalesce(sum(s.duplicate_states), 0) AS duplicate_states,
         coalesce(sum(s.episode_mismatch), 0) AS episode_mismatch,
         coalesce(sum(s.null_sums), 0) AS null_sums,
         coalesce(sum(s.episodes), 0) AS episodes
  FROM shards s
)
SELECT k.mixed_buckets,
       CAST(t.bad_ranges AS BIGINT) AS bad_ranges,
       CAST(g.overlapping AS BIGINT) AS overlapping,
       CAST(g.inner_gaps + CASE WHEN g.top < k.buckets - 1 THEN k.buckets - 1 - g.top ELSE 0 END
            AS BIGINT) AS missing_buckets,
       CAST(t.duplicate_states AS BIGINT) AS duplicate_states,
       CAST(t.episode_mismatch AS BIGINT) AS episode_mismatch,
       CAST(t.null_sums AS BIGINT) AS null_sums,
       u.mixed_max_states,
       CAST(t.episodes AS BIGINT) AS episodes
FROM k CROSS JOIN gaps g CROSS JOIN totals t CROSS JOIN bounds u;
