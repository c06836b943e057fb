-- sqlite: written by sql/gen_dialects.py from sql/src/stats_merge_check.sql; edit the source, not this file.
-- stats_merge_check.sql: before one release from the statistics of several
-- shards, check that the shards' bucket ranges partition 0..buckets-1, so
-- that no episode can be counted in two shards (a patient counted twice
-- would break the privacy unit), and give m.
--
-- Input: a table shard_stats with the rows of every shard's
-- first_visit_stats.sql (state, visits, return_sum, buckets, bucket_lo,
-- bucket_hi, episodes, max_states, made_with), UNION ALL.  A shard = one (bucket_lo,
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
--   mixed_made_with   shards whose made_with differs from that of the
--                     first shard (in bucket order), or whose rows carry
--                     more than one (NULL counting as one): made with
--                     another gamma, bounds,
--                     n_states or max_states (made_with texts are compared,
--                     so compare shards of one engine here; dprl's
--                     _from_stats compares the values, across engines)
--   episodes          m = the sum of the shards' episodes: the
--                     "episodes" option of dp_lsw_from_stats
--   made_with_differs NULL when mixed_made_with = 0; else the first such
--                     shard's buckets and made_with against the first
--                     shard's ("buckets 4..7: {...} vs buckets 0..3: {...}"),
--                     or both of its texts ("buckets 4..7 carry NULL and {...}")
WITH
shards AS (
  SELECT buckets, bucket_lo, bucket_hi,
         min(episodes) AS episodes,
         CASE WHEN count(DISTINCT episodes) = 1 THEN 0 ELSE 1 END AS episode_mismatch,
         count(*) - count(DISTINCT state) AS duplicate_states,
         sum(CASE WHEN return_sum IS NULL THEN 1 ELSE 0 END) AS null_sums,
         min(coalesce(made_with, 'NULL')) AS made_with,
         max(coalesce(made_with, 'NULL')) AS made_with_hi
  FROM shard_stats
  GROUP BY buckets, bucket_lo, bucket_hi
),
-- a shard differs from the first (in bucket order) by its made_with
compared AS (
  SELECT s.bucket_lo, s.bucket_hi, s.made_with, s.made_with_hi, f.bucket_lo AS first_lo,
         f.bucket_hi AS first_hi, f.made_with AS first_made_with,
         CASE WHEN s.made_with <> s.made_with_hi OR s.made_with <> f.made_with
              THEN 1 ELSE 0 END AS differs
  FROM shards s CROSS JOIN (
    SELECT bucket_lo, bucket_hi, made_with FROM shards
    ORDER BY bucket_lo, bucket_hi, buckets LIMIT 1) f
),
made AS (
  SELECT coalesce(sum(c.differs), 0) AS mixed_made_with,
         (SELECT 'buckets ' || CAST(d.bucket_lo AS TEXT) || '..' || CAST(d.bucket_hi AS TEXT)
                 || CASE WHEN d.made_with <> d.made_with_hi
                         THEN ' carry ' || d.made_with || ' and ' || d.made_with_hi
                         ELSE ': ' || d.made_with || ' vs buckets ' || CAST(d.first_lo AS TEXT)
                              || '..' || CAST(d.first_hi AS TEXT) || ': ' || d.first_made_with
                    END
          FROM compared d WHERE d.differs = 1
          ORDER BY d.bucket_lo, d.bucket_hi LIMIT 1) AS made_with_differs
  FROM compared c
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
       CAST(w.mixed_made_with AS BIGINT) AS mixed_made_with,
       CAST(t.episodes AS BIGINT) AS episodes,
       w.made_with_differs
FROM k CROSS JOIN gaps g CROSS JOIN totals t CROSS JOIN bounds u CROSS JOIN made w;
