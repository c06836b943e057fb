-- The public parameters: the one row of the table dprl_params (more rows
-- or none: refused).  Each is cast to a double (or a 64-bit integer) here,
-- so a parameter written as 0.99 is never an exact NUMERIC (PostgreSQL) or
-- DECIMAL (Spark, DuckDB).  rmin and rmax are required (NULL: refused, as
-- dprl refuses options without them); NULL fmin/fmax mean dprl's defaults;
-- NULL max_states means no contribution bound.
-- (LIMIT 1 also tells a planner without table statistics that this is
-- one row, which keeps PostgreSQL's plans fast.)
params AS (
  SELECT CAST(p.gamma AS DOUBLE PRECISION) AS gamma,
         CAST(p.rmin AS DOUBLE PRECISION) AS rmin,
         CAST(p.rmax AS DOUBLE PRECISION) AS rmax,
         CAST(p.fmin AS DOUBLE PRECISION) AS fmin_given,
         CAST(p.fmax AS DOUBLE PRECISION) AS fmax_given,
         CAST(p.n_states AS BIGINT) AS n_states,
         CAST(p.n_states AS DOUBLE PRECISION) AS n_states_given,
         CAST(p.max_states AS DOUBLE PRECISION) AS max_states_given,
         coalesce(CAST(p.buckets AS BIGINT), CAST(1 AS BIGINT)) AS buckets,
         coalesce(CAST(p.bucket_lo AS BIGINT), CAST(0 AS BIGINT)) AS bucket_lo,
         coalesce(CAST(p.bucket_hi AS BIGINT),
                  coalesce(CAST(p.buckets AS BIGINT), CAST(1 AS BIGINT)) - 1) AS bucket_hi,
         (SELECT count(*) FROM dprl_params) AS param_rows
  FROM (SELECT * FROM dprl_params LIMIT 1) p
),
-- dprl's defaults: fmin = min(0, rmin)/(1-gamma), fmax = max(0, rmax)/(1-gamma).
defaults AS (
  SELECT p.*,
         CASE WHEN p.fmin_given IS NOT NULL THEN p.fmin_given
              WHEN p.rmin < 0 THEN p.rmin / nullif(1 - p.gamma, 0)
              ELSE CAST(0 AS DOUBLE PRECISION) END AS fmin,
         CASE WHEN p.fmax_given IS NOT NULL THEN p.fmax_given
              WHEN p.rmax > 0 THEN p.rmax / nullif(1 - p.gamma, 0)
              ELSE CAST(0 AS DOUBLE PRECISION) END AS fmax
  FROM params p
),
-- ok = 1 when dprl would accept these options (gamma, rmin, rmax, fmin,
-- fmax, n_states, max_states: the same rules) and
-- 0 <= bucket_lo <= bucket_hi < buckets.
-- Each test is written so that NULL or NaN fails it.
checked AS (
  SELECT d.*,
         CASE WHEN d.param_rows = 1 AND d.gamma >= 0 AND d.gamma <= 1
               AND d.rmin - d.rmin = 0 AND d.rmax - d.rmax = 0 AND d.rmax > d.rmin
               AND (d.fmin_given IS NULL OR d.fmin_given <= 0)
               AND (d.fmax_given IS NULL OR d.fmax_given > 0)
               AND (d.gamma < 1 OR d.fmax_given IS NOT NULL)
               AND (d.gamma < 1 OR d.rmin >= 0 OR d.fmin_given IS NOT NULL)
               AND d.fmax > d.fmin AND (d.fmax - d.fmin) - (d.fmax - d.fmin) = 0
               AND d.n_states >= 1 AND d.n_states <= 134217728
               AND d.n_states_given = d.n_states
               AND (d.max_states_given IS NULL
                    OR (d.max_states_given >= 1 AND d.max_states_given <= 2147483647
                        AND d.max_states_given = floor(d.max_states_given)))
               AND d.buckets >= 1 AND d.bucket_lo >= 0 AND d.bucket_lo <= d.bucket_hi
               AND d.bucket_hi < d.buckets
              THEN 1 ELSE 0 END AS ok
  FROM defaults d
),
-- Blocks: blen = ceil(92 / ln(1/gamma)) steps, so gamma^j >= e^-92 > 1e-40
-- for every offset j inside a block (blen = 1 when gamma = 0; one block
-- when gamma = 1); carry = gamma^blen <= e^-92.  g is gamma, or 0 when
-- the parameters are refused (nothing below can then overflow).
-- max_states: the bound as an integer (NULL: none, or refused).
bounds AS (
  SELECT q.*, power(q.g, q.blen) AS carry
  FROM (
    SELECT c.*,
           CASE WHEN c.ok = 1 THEN CAST(c.max_states_given AS BIGINT) END AS max_states,
           CASE WHEN c.ok = 1 THEN c.gamma ELSE CAST(0 AS DOUBLE PRECISION) END AS g,
           CASE WHEN c.ok = 1 AND c.gamma >= 1 THEN CAST(4611686018427387904 AS BIGINT)
                WHEN c.ok = 1 AND c.gamma > 0 THEN CAST(ceil(92 / (0 - ln(c.gamma))) AS BIGINT)
                ELSE CAST(1 AS BIGINT) END AS blen
    FROM checked c
  ) q
),
