-- stats_merge_check.sql for ClickHouse (18.16 and later): before one
-- release from the statistics of several shards, check that their bucket
-- ranges partition 0..buckets-1, and give m.  The same input (shard_stats:
-- the shards' first_visit_stats.sql rows, UNION ALL) and output as
-- sql/src/stats_merge_check.sql (read its header): mixed_buckets,
-- bad_ranges, overlapping, missing_buckets, duplicate_states,
-- episode_mismatch, null_sums, mixed_max_states, mixed_made_with, episodes,
-- made_with_differs.  A shard = one (buckets, bucket_lo, bucket_hi).
-- Without window functions, the shards are one array in bucket order;
-- reach = the highest bucket covered by the shards before one (the shards
-- are few: at most buckets).
SELECT toInt64(mixed_buckets) AS mixed_buckets,
       toInt64(bad_ranges) AS bad_ranges,
       toInt64(arraySum(arrayMap((x, r) -> tupleElement(x, 1) <= r, ordered, reach))) AS overlapping,
       toInt64(arraySum(arrayMap((x, r) -> CASE WHEN tupleElement(x, 1) > r + 1 THEN tupleElement(x, 1) - r - 1 ELSE 0 END,
                                 ordered, reach))
               + CASE WHEN top < k - 1 THEN k - 1 - top ELSE 0 END) AS missing_buckets,
       toInt64(duplicate_states) AS duplicate_states,
       toInt64(episode_mismatch) AS episode_mismatch,
       toInt64(null_sums) AS null_sums,
       toInt64(mixed_max_states) AS mixed_max_states,
       toInt64(arraySum(differs)) AS mixed_made_with,
       toInt64(episodes) AS episodes,
       CASE WHEN arraySum(differs) > 0 THEN concat(
         'buckets ', toString(tupleElement(d, 1)), '..', toString(tupleElement(d, 2)),
         CASE WHEN tupleElement(d, 4) != tupleElement(d, 5)
              THEN concat(' carry ', tupleElement(d, 4), ' and ', tupleElement(d, 5))
              ELSE concat(': ', tupleElement(d, 4), ' vs buckets ', toString(tupleElement(ordered[1], 1)),
                          '..', toString(tupleElement(ordered[1], 2)), ': ', tupleElement(ordered[1], 4))
         END) END AS made_with_differs
FROM (
  SELECT CASE WHEN uniqExact(buckets) = 1 THEN 0 ELSE 1 END AS mixed_buckets,
         ifNull(max(buckets), 0) AS k,
         sum(CASE WHEN bucket_lo >= 0 AND bucket_lo <= bucket_hi AND bucket_hi < buckets
                  THEN 0 ELSE 1 END) AS bad_ranges,
         sum(shard_duplicate_states) AS duplicate_states,
         sum(shard_episode_mismatch) AS episode_mismatch,
         sum(shard_null_sums) AS null_sums,
         sum(shard_episodes) AS episodes,
         ifNull(max(bucket_hi), -1) AS top,
         CASE WHEN length(groupUniqArrayArray(shard_max_states)) = 1 THEN 0 ELSE 1 END
           AS mixed_max_states,
         -- the shards in bucket order: (lo, hi, buckets, the least and the
         -- greatest made_with of its rows, NULL counting as 'NULL')
         -- (a NULL bound, counted in bad_ranges, is -1 here)
         arraySort(x -> (tupleElement(x, 1), tupleElement(x, 2), tupleElement(x, 3)),
                   groupArray((ifNull(bucket_lo, -1), ifNull(bucket_hi, -1),
                               ifNull(buckets, -1), shard_made_with,
                               shard_made_with_hi))) AS ordered,
         arrayMap(x -> tupleElement(x, 2), ordered) AS his,
         arrayMap(i -> CASE WHEN i = 1 THEN -1 ELSE arrayReduce('max', arraySlice(his, 1, i - 1)) END,
                  arrayEnumerate(ordered)) AS reach,
         -- a shard differs from the first by its made_with, or carries
         -- more than one
         arrayMap(x -> tupleElement(x, 4) != tupleElement(x, 5)
                       OR tupleElement(x, 4) != tupleElement(ordered[1], 4),
                  ordered) AS differs,
         arrayFirst((x, d) -> d = 1, ordered, differs) AS d
  FROM (
    SELECT buckets, bucket_lo, bucket_hi,
           min(episodes) AS shard_episodes,
           CASE WHEN uniqExact(episodes) = 1 THEN 0 ELSE 1 END AS shard_episode_mismatch,
           count() - uniqExact(state) AS shard_duplicate_states,
           sum(CASE WHEN return_sum IS NULL THEN 1 ELSE 0 END) AS shard_null_sums,
           groupUniqArray(ifNull(max_states, 0)) AS shard_max_states,
           min(ifNull(made_with, 'NULL')) AS shard_made_with,
           max(ifNull(made_with, 'NULL')) AS shard_made_with_hi
    FROM shard_stats
    GROUP BY buckets, bucket_lo, bucket_hi
  )
)
