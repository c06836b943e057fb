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
              ',"dialect":"@DIALECT@","version":"@VERSION@"}') END AS made_with
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
