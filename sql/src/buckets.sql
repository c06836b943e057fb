-- The bucket of each episode: a hash of its id (as text; an integer id
-- as its decimal digits) mod buckets.  The hash is the same in every
-- engine: h = @HASH_DOC@
-- Not computed when buckets = 1.
episode_buckets AS (
  SELECT h.episode,
         CASE WHEN b.buckets = 1 THEN CAST(0 AS BIGINT) ELSE (@ID_HASH@) % b.buckets END AS bucket
  FROM (
    SELECT e.episode, CAST(e.episode AS TEXT) AS id,
           CAST(length(CAST(e.episode AS TEXT)) AS BIGINT) AS n
    FROM (SELECT DISTINCT episode FROM steps WHERE episode IS NOT NULL) e
  ) h CROSS JOIN bounds b
),
