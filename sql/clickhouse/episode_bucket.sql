-- clickhouse: written by sql/gen_dialects.py from sql/src/clickhouse/episode_bucket.sql; edit the source, not this file.
-- episode_bucket.sql for ClickHouse (18.16 and later): the bucket of each
-- episode, for sharding (and as a Distributed table's sharding key): the
-- hash of sql/src/buckets.sql, the same in every engine and in Python
-- (bucket_hash_py in sql/gen_dialects.py).  lengthUTF8 counts characters,
-- as length() does in the other engines.
-- Input: steps(episode, ...) and dprl_params (only buckets is used; NULL: 1).
-- Output: episode, bucket (0..buckets-1; NULL when buckets < 1).
WITH
  -- The parameters by name (each use runs the subquery: use few).
  -- The public parameters, as in sql/src/params.sql (the same checks and
  -- defaults, each test written so that NULL or NaN fails it), in one
  -- scalar subquery (ClickHouse 18.16 has no CTEs).  Each step is its own
  -- SELECT: ClickHouse substitutes aliases as whole expressions, and a
  -- chain of them (ok in g, blen and made_with) makes every use of the
  -- parameters slow to analyze.
  -- Aggregates give one row, also when dprl_params has none or several
  -- (refused: param_rows <> 1).  The tuple: (ok, g, blen, carry, rmin,
  -- rmax, fmin, fmax, n_states, max_states, buckets, bucket_lo, bucket_hi,
  -- made_with); ok = 1 when dprl would accept them, and the others are then
  -- the ones used (refused: g = 0, blen = 1, so nothing can overflow;
  -- max_states and made_with NULL).  ClickHouse runs the subquery at each
  -- place it is named: the files name it once per SELECT that needs it, as
  -- a column (prm) that the next SELECT reads by element.
  (SELECT tuple(ok, g, blen, pow(g, blen), ifNull(rmin_v, 0.), ifNull(rmax_v, 0.),
                ifNull(fmin_v, 0.), ifNull(fmax_v, 0.), ifNull(n_states_v, 0),
                CASE WHEN ok = 1 THEN toInt64(max_states_given) END,
                buckets_v, bucket_lo_v, bucket_hi_v, made_with)
   FROM (
     SELECT *,
            CASE WHEN ok = 1 THEN assumeNotNull(gamma_v) ELSE 0. END AS g,
            -- blocks of blen = ceil(92 / ln(1/gamma)) steps (one block when
            -- gamma = 1, blen = 1 when gamma = 0): gamma^j >= e^-92 inside
            ifNull(CASE WHEN ok = 1 AND gamma_v >= 1 THEN toInt64(4611686018427387904)
                        WHEN ok = 1 AND gamma_v > 0
                          THEN toInt64(ceil(92 / (0 - ln(greatest(assumeNotNull(gamma_v), 1e-300)))))
                        ELSE toInt64(1) END, toInt64(1)) AS blen,
            -- what the statistics were made with: doubles by toString, the
            -- shortest text that reads back as the same double
            CASE WHEN ok = 1 THEN concat(
              '{"gamma":', toString(assumeNotNull(gamma_v)),
              ',"rmin":', toString(assumeNotNull(rmin_v)),
              ',"rmax":', toString(assumeNotNull(rmax_v)),
              ',"fmin":', toString(assumeNotNull(fmin_v)),
              ',"fmax":', toString(assumeNotNull(fmax_v)),
              ',"n_states":', toString(assumeNotNull(n_states_v)),
              ',"max_states":', ifNull(toString(toInt64(max_states_given)), 'null'),
              ',"dialect":"clickhouse","version":"0.2.0"}') END AS made_with
     FROM (
       SELECT *,
              -- (ifNull: a condition on a NULL makes CASE's result NULL here)
              ifNull(CASE WHEN param_rows = 1 AND gamma_v >= 0 AND gamma_v <= 1
                           AND rmin_v - rmin_v = 0 AND rmax_v - rmax_v = 0 AND rmax_v > rmin_v
                           AND (fmin_given IS NULL OR fmin_given <= 0)
                           AND (fmax_given IS NULL OR fmax_given > 0)
                           AND (gamma_v < 1 OR fmax_given IS NOT NULL)
                           AND (gamma_v < 1 OR rmin_v >= 0 OR fmin_given IS NOT NULL)
                           AND fmax_v > fmin_v AND (fmax_v - fmin_v) - (fmax_v - fmin_v) = 0
                           AND n_states_v >= 1 AND n_states_v <= 134217728
                           AND n_states_given = n_states_v
                           AND (max_states_given IS NULL
                                OR (max_states_given >= 1 AND max_states_given <= 2147483647
                                    AND max_states_given = floor(max_states_given)))
                           AND buckets_v >= 1 AND bucket_lo_v >= 0
                           AND bucket_lo_v <= bucket_hi_v AND bucket_hi_v < buckets_v
                          THEN 1 ELSE 0 END, 0) AS ok
       FROM (
         -- dprl's defaults: fmin = min(0, rmin)/(1-gamma), fmax = max(0, rmax)/(1-gamma)
         SELECT *,
                CASE WHEN fmin_given IS NOT NULL THEN fmin_given
                     WHEN rmin_v < 0 THEN rmin_v / (1 - gamma_v)
                     ELSE toNullable(0.) END AS fmin_v,
                CASE WHEN fmax_given IS NOT NULL THEN fmax_given
                     WHEN rmax_v > 0 THEN rmax_v / (1 - gamma_v)
                     ELSE toNullable(0.) END AS fmax_v
         FROM (
           -- aggregates: one row, also when dprl_params has none or several
           -- (refused: param_rows <> 1)
           SELECT count() AS param_rows,
                  toNullable(toFloat64(any(gamma))) AS gamma_v,
                  toNullable(toFloat64(any(rmin))) AS rmin_v,
                  toNullable(toFloat64(any(rmax))) AS rmax_v,
                  toNullable(toFloat64(any(fmin))) AS fmin_given,
                  toNullable(toFloat64(any(fmax))) AS fmax_given,
                  toNullable(toInt64(any(n_states))) AS n_states_v,
                  toNullable(toFloat64(any(n_states))) AS n_states_given,
                  toNullable(toFloat64(any(max_states))) AS max_states_given,
                  ifNull(toInt64(any(buckets)), toInt64(1)) AS buckets_v,
                  ifNull(toInt64(any(bucket_lo)), toInt64(0)) AS bucket_lo_v,
                  ifNull(toInt64(any(bucket_hi)), ifNull(toInt64(any(buckets)), toInt64(1)) - 1)
                    AS bucket_hi_v
           FROM dprl_params
         )
       )
     )
   ))
  AS p_all,
  tupleElement(p_all, 1) AS p_ok,
  tupleElement(p_all, 2) AS p_g,
  tupleElement(p_all, 3) AS p_blen,
  tupleElement(p_all, 4) AS p_carry,
  tupleElement(p_all, 5) AS p_rmin,
  tupleElement(p_all, 6) AS p_rmax,
  tupleElement(p_all, 7) AS p_fmin,
  tupleElement(p_all, 8) AS p_fmax,
  tupleElement(p_all, 9) AS p_n_states,
  tupleElement(p_all, 10) AS p_max_states,
  tupleElement(p_all, 11) AS p_buckets,
  tupleElement(p_all, 12) AS p_lo,
  tupleElement(p_all, 13) AS p_hi,
  tupleElement(p_all, 14) AS p_made_with
SELECT episode,
       CASE WHEN p_buckets = 1 THEN toInt64(0)
            WHEN p_buckets > 1 THEN toInt64((h.n * 48271
            + (h.n - lengthUTF8(replaceAll(h.id, '0', ''))) * 605248
            + (h.n - lengthUTF8(replaceAll(h.id, '1', ''))) * 391013
            + (h.n - lengthUTF8(replaceAll(h.id, '2', ''))) * 714895
            + (h.n - lengthUTF8(replaceAll(h.id, '3', ''))) * 662807
            + (h.n - lengthUTF8(replaceAll(h.id, '4', ''))) * 354462
            + (h.n - lengthUTF8(replaceAll(h.id, '5', ''))) * 898846
            + (h.n - lengthUTF8(replaceAll(h.id, '6', ''))) * 713943
            + (h.n - lengthUTF8(replaceAll(h.id, '7', ''))) * 584999
            + (h.n - lengthUTF8(replaceAll(h.id, '8', ''))) * 676043
            + (h.n - lengthUTF8(replaceAll(h.id, '9', ''))) * 301795
            + (h.n - lengthUTF8(replaceAll(h.id, 'a', ''))) * 424598
            + (h.n - lengthUTF8(replaceAll(h.id, 'b', ''))) * 324997
            + (h.n - lengthUTF8(replaceAll(h.id, 'c', ''))) * 525935
            + (h.n - lengthUTF8(replaceAll(h.id, 'd', ''))) * 132100
            + (h.n - lengthUTF8(replaceAll(h.id, 'e', ''))) * 891045
            + (h.n - lengthUTF8(replaceAll(h.id, 'f', ''))) * 551323
            + (h.n - lengthUTF8(replaceAll(h.id, 'g', ''))) * 921386
            + (h.n - lengthUTF8(replaceAll(h.id, 'h', ''))) * 523146
            + (h.n - lengthUTF8(replaceAll(h.id, 'i', ''))) * 775870
            + (h.n - lengthUTF8(replaceAll(h.id, 'j', ''))) * 20458
            + (h.n - lengthUTF8(replaceAll(h.id, 'k', ''))) * 934443
            + (h.n - lengthUTF8(replaceAll(h.id, 'l', ''))) * 650787
            + (h.n - lengthUTF8(replaceAll(h.id, 'm', ''))) * 299881
            + (h.n - lengthUTF8(replaceAll(h.id, 'n', ''))) * 24329
            + (h.n - lengthUTF8(replaceAll(h.id, 'o', ''))) * 870436
            + (h.n - lengthUTF8(replaceAll(h.id, 'p', ''))) * 717271
            + (h.n - lengthUTF8(replaceAll(h.id, 'q', ''))) * 508254
            + (h.n - lengthUTF8(replaceAll(h.id, 'r', ''))) * 428034
            + (h.n - lengthUTF8(replaceAll(h.id, 's', ''))) * 414454
            + (h.n - lengthUTF8(replaceAll(h.id, 't', ''))) * 561783
            + (h.n - lengthUTF8(replaceAll(h.id, 'u', ''))) * 439782
            + (h.n - lengthUTF8(replaceAll(h.id, 'v', ''))) * 403801
            + (h.n - lengthUTF8(replaceAll(h.id, 'w', ''))) * 720779
            + (h.n - lengthUTF8(replaceAll(h.id, 'x', ''))) * 176389
            + (h.n - lengthUTF8(replaceAll(h.id, 'y', ''))) * 44279
            + (h.n - lengthUTF8(replaceAll(h.id, 'z', ''))) * 915439
            + (h.n - lengthUTF8(replaceAll(h.id, 'A', ''))) * 813437
            + (h.n - lengthUTF8(replaceAll(h.id, 'B', ''))) * 181211
            + (h.n - lengthUTF8(replaceAll(h.id, 'C', ''))) * 68102
            + (h.n - lengthUTF8(replaceAll(h.id, 'D', ''))) * 854338
            + (h.n - lengthUTF8(replaceAll(h.id, 'E', ''))) * 267478
            + (h.n - lengthUTF8(replaceAll(h.id, 'F', ''))) * 518486
            + (h.n - lengthUTF8(replaceAll(h.id, 'G', ''))) * 462415
            + (h.n - lengthUTF8(replaceAll(h.id, 'H', ''))) * 379181
            + (h.n - lengthUTF8(replaceAll(h.id, 'I', ''))) * 670166
            + (h.n - lengthUTF8(replaceAll(h.id, 'J', ''))) * 892312
            + (h.n - lengthUTF8(replaceAll(h.id, 'K', ''))) * 12732
            + (h.n - lengthUTF8(replaceAll(h.id, 'L', ''))) * 193021
            + (h.n - lengthUTF8(replaceAll(h.id, 'M', ''))) * 819835
            + (h.n - lengthUTF8(replaceAll(h.id, 'N', ''))) * 317677
            + (h.n - lengthUTF8(replaceAll(h.id, 'O', ''))) * 430349
            + (h.n - lengthUTF8(replaceAll(h.id, 'P', ''))) * 342673
            + (h.n - lengthUTF8(replaceAll(h.id, 'Q', ''))) * 693170
            + (h.n - lengthUTF8(replaceAll(h.id, 'R', ''))) * 654983
            + (h.n - lengthUTF8(replaceAll(h.id, 'S', ''))) * 590113
            + (h.n - lengthUTF8(replaceAll(h.id, 'T', ''))) * 406298
            + (h.n - lengthUTF8(replaceAll(h.id, 'U', ''))) * 727551
            + (h.n - lengthUTF8(replaceAll(h.id, 'V', ''))) * 818918
            + (h.n - lengthUTF8(replaceAll(h.id, 'W', ''))) * 953367
            + (h.n - lengthUTF8(replaceAll(h.id, 'X', ''))) * 218777
            + (h.n - lengthUTF8(replaceAll(h.id, 'Y', ''))) * 19633
            + (h.n - lengthUTF8(replaceAll(h.id, 'Z', ''))) * 59155) % greatest(p_buckets, 1)) END AS bucket
FROM (
  SELECT episode, toString(episode) AS id, toInt64(lengthUTF8(toString(episode))) AS n
  FROM steps WHERE episode IS NOT NULL GROUP BY episode
) h
