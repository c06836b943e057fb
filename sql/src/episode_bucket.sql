-- episode_bucket.sql: the bucket of each episode, for sharding: an
-- episode belongs to the shard whose bucket_lo..bucket_hi holds its bucket.
--
-- Input: steps(episode, ...) and dprl_params (only buckets is used here).
-- Output: episode, bucket (0..buckets-1), one row per episode.
-- The bucket is a hash of the episode id, the same in every engine (and
-- in Python: bucket_hash_py in sql/gen_dialects.py), so every engine that
-- loads or routes steps puts an episode in the same bucket.
WITH
@include params.sql
@include buckets.sql
report AS (SELECT episode, bucket FROM episode_buckets)
SELECT * FROM report;
