    -- One row: the steps dprl would refuse, counted by reason (each test
    -- written so that NULL or NaN fails it), the episodes, and the episodes
    -- whose bucket is outside bucket_lo..bucket_hi.
    -- duplicate_steps: the rows beyond the first of each (episode, t), what
    -- the other dialects count as a step whose t equals the previous one's
    -- (a NULL episode is one episode there too; tuple() keeps NULL as a value).
    SELECT
      sum(CASE WHEN episode IS NULL THEN 1 ELSE 0 END) AS null_episode,
      sum(CASE WHEN t IS NULL THEN 1 ELSE 0 END) AS null_t,
      sum(CASE WHEN state IS NULL THEN 1 ELSE 0 END) AS null_state,
      sum(CASE WHEN reward IS NULL THEN 1 ELSE 0 END) AS null_reward,
      sum(CASE WHEN reward IS NULL OR reward - reward = 0 THEN 0 ELSE 1 END) AS nonfinite_reward,
      sum(CASE WHEN t IS NULL OR (t - t = 0 AND t = floor(t)) THEN 0 ELSE 1 END) AS non_integer_t,
      sum(CASE WHEN state IS NULL OR (state - state = 0 AND state = floor(state))
               THEN 0 ELSE 1 END) AS non_integer_state,
      sum(CASE WHEN state IS NULL OR (state >= 0 AND state < tupleElement(prm, 9)) THEN 0
               ELSE 1 END) AS state_out_of_range,
      toUInt64(countIf(t IS NOT NULL) - uniqExactIf(tuple(episode, t), t IS NOT NULL))
        AS duplicate_steps,
      uniqExact(episode) AS episodes,
      (SELECT sum(CASE WHEN bucket >= lo AND bucket <= hi THEN 0 ELSE 1 END)
       FROM (
         SELECT lo, hi,
                -- the bucket hash of sql/src/buckets.sql (lengthUTF8: characters)
                CASE WHEN buckets = 1 THEN toInt64(0)
                     ELSE toInt64((@ID_HASH@) % greatest(buckets, 1)) END AS bucket
         FROM (
           SELECT id, n, tupleElement(prm, 11) AS buckets, tupleElement(prm, 12) AS lo,
                  tupleElement(prm, 13) AS hi
           FROM (
             SELECT toString(episode) AS id, toInt64(lengthUTF8(toString(episode))) AS n,
@include clickhouse/params_tuple.sql
                    AS prm
             FROM steps WHERE episode IS NOT NULL GROUP BY episode
           )
         ) h
       )) AS outside_buckets
    FROM (
      -- prm: the parameters (params_tuple.sql); element 9 is n_states
      SELECT episode, t, state, reward,
@include clickhouse/params_tuple.sql
             AS prm
      FROM steps
    )
