-- episode_bucket.sql for ClickHouse (18.16 and later): the bucket of each
-- episode, for sharding (and as a Distributed table's sharding key): the
-- hash of sql/src/buckets.sql, the same in every engine and in Python
-- (bucket_hash_py in sql/gen_dialects.py).  lengthUTF8 counts characters,
-- as length() does in the other engines.
-- Input: steps(episode, ...) and dprl_params (only buckets is used; NULL: 1).
-- Output: episode, bucket (0..buckets-1; NULL when buckets < 1).
WITH
@include clickhouse/bounds.sql
SELECT episode,
       CASE WHEN p_buckets = 1 THEN toInt64(0)
            WHEN p_buckets > 1 THEN toInt64((@ID_HASH@) % greatest(p_buckets, 1)) END AS bucket
FROM (
  SELECT episode, toString(episode) AS id, toInt64(lengthUTF8(toString(episode))) AS n
  FROM steps WHERE episode IS NOT NULL GROUP BY episode
) h
