-- sqlite: written by sql/gen_dialects.py from sql/src/first_visit_check.sql; edit the source, not this file.
-- first_visit_check.sql: what dprl would refuse in the steps, counted.
-- Every column must be 0 before the statistics of first_visit_stats.sql
-- are trusted (that query also returns NULL sums when one is not).
--
-- Input: the same steps(episode, t, state, reward) and dprl_params as
-- first_visit_stats.sql.  Output: one row,
--   bad_params          1 when dprl would refuse the parameters
--   null_episode, null_t, null_state, null_reward   NULL values
--   nonfinite_reward    NaN, +Infinity or -Infinity
--   non_integer_t, non_integer_state   not a (finite) integer
--   state_out_of_range  state outside 0..n_states-1
--   duplicate_steps     a second step with the same (episode, t)
--   outside_buckets     episodes whose bucket is outside bucket_lo..bucket_hi
-- A column's type is not checked: in SQLite, where any column holds any
-- value, dprl also refuses text or blob rewards, t and states that this
-- query may count as numbers; declare the table STRICT or check typeof().
WITH
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
-- Each step: its position in the episode (0, 1, ... in t order), whether
-- it is the first visit of its state, whether its (episode, t) repeats.
marked AS (
  SELECT s.episode, s.t, s.state, CAST(s.reward AS DOUBLE PRECISION) AS reward,
         row_number() OVER (PARTITION BY s.episode ORDER BY s.t) - 1 AS pos,
         row_number() OVER (PARTITION BY s.episode, s.state ORDER BY s.t) AS nth_visit,
         CASE WHEN lag(s.t) OVER (PARTITION BY s.episode ORDER BY s.t) = s.t
              THEN 1 ELSE 0 END AS dup
  FROM steps s
),
-- The bucket of each episode: a hash of its id (as text; an integer id
-- as its decimal digits) mod buckets.  The hash is the same in every
-- engine: h = n * W0 + sum over the characters c in 0-9, a-z, A-Z of
-- W_c * (occurrences of c in the id), n = its length in characters
-- (weights in the expression below; sql/gen_dialects.py writes it).
-- Not computed when buckets = 1.
episode_buckets AS (
  SELECT h.episode,
         CASE WHEN b.buckets = 1 THEN CAST(0 AS BIGINT) ELSE (h.n * 48271
            + (h.n - length(replace(h.id, '0', ''))) * 605248
            + (h.n - length(replace(h.id, '1', ''))) * 391013
            + (h.n - length(replace(h.id, '2', ''))) * 714895
            + (h.n - length(replace(h.id, '3', ''))) * 662807
            + (h.n - length(replace(h.id, '4', ''))) * 354462
            + (h.n - length(replace(h.id, '5', ''))) * 898846
            + (h.n - length(replace(h.id, '6', ''))) * 713943
            + (h.n - length(replace(h.id, '7', ''))) * 584999
            + (h.n - length(replace(h.id, '8', ''))) * 676043
            + (h.n - length(replace(h.id, '9', ''))) * 301795
            + (h.n - length(replace(h.id, 'a', ''))) * 424598
            + (h.n - length(replace(h.id, 'b', ''))) * 324997
            + (h.n - length(replace(h.id, 'c', ''))) * 525935
            + (h.n - length(replace(h.id, 'd', ''))) * 132100
            + (h.n - length(replace(h.id, 'e', ''))) * 891045
            + (h.n - length(replace(h.id, 'f', ''))) * 551323
            + (h.n - length(replace(h.id, 'g', ''))) * 921386
            + (h.n - length(replace(h.id, 'h', ''))) * 523146
            + (h.n - length(replace(h.id, 'i', ''))) * 775870
            + (h.n - length(replace(h.id, 'j', ''))) * 20458
            + (h.n - length(replace(h.id, 'k', ''))) * 934443
            + (h.n - length(replace(h.id, 'l', ''))) * 650787
            + (h.n - length(replace(h.id, 'm', ''))) * 299881
            + (h.n - length(replace(h.id, 'n', ''))) * 24329
            + (h.n - length(replace(h.id, 'o', ''))) * 870436
            + (h.n - length(replace(h.id, 'p', ''))) * 717271
            + (h.n - length(replace(h.id, 'q', ''))) * 508254
            + (h.n - length(replace(h.id, 'r', ''))) * 428034
            + (h.n - length(replace(h.id, 's', ''))) * 414454
            + (h.n - length(replace(h.id, 't', ''))) * 561783
            + (h.n - length(replace(h.id, 'u', ''))) * 439782
            + (h.n - length(replace(h.id, 'v', ''))) * 403801
            + (h.n - length(replace(h.id, 'w', ''))) * 720779
            + (h.n - length(replace(h.id, 'x', ''))) * 176389
            + (h.n - length(replace(h.id, 'y', ''))) * 44279
            + (h.n - length(replace(h.id, 'z', ''))) * 915439
            + (h.n - length(replace(h.id, 'A', ''))) * 813437
            + (h.n - length(replace(h.id, 'B', ''))) * 181211
            + (h.n - length(replace(h.id, 'C', ''))) * 68102
            + (h.n - length(replace(h.id, 'D', ''))) * 854338
            + (h.n - length(replace(h.id, 'E', ''))) * 267478
            + (h.n - length(replace(h.id, 'F', ''))) * 518486
            + (h.n - length(replace(h.id, 'G', ''))) * 462415
            + (h.n - length(replace(h.id, 'H', ''))) * 379181
            + (h.n - length(replace(h.id, 'I', ''))) * 670166
            + (h.n - length(replace(h.id, 'J', ''))) * 892312
            + (h.n - length(replace(h.id, 'K', ''))) * 12732
            + (h.n - length(replace(h.id, 'L', ''))) * 193021
            + (h.n - length(replace(h.id, 'M', ''))) * 819835
            + (h.n - length(replace(h.id, 'N', ''))) * 317677
            + (h.n - length(replace(h.id, 'O', ''))) * 430349
            + (h.n - length(replace(h.id, 'P', ''))) * 342673
            + (h.n - length(replace(h.id, 'Q', ''))) * 693170
            + (h.n - length(replace(h.id, 'R', ''))) * 654983
            + (h.n - length(replace(h.id, 'S', ''))) * 590113
            + (h.n - length(replace(h.id, 'T', ''))) * 406298
            + (h.n - length(replace(h.id, 'U', ''))) * 727551
            + (h.n - length(replace(h.id, 'V', ''))) * 818918
            + (h.n - length(replace(h.id, 'W', ''))) * 953367
            + (h.n - length(replace(h.id, 'X', ''))) * 218777
            + (h.n - length(replace(h.id, 'Y', ''))) * 19633
            + (h.n - length(replace(h.id, 'Z', ''))) * 59155) % b.buckets END AS bucket
  FROM (
    SELECT e.episode, CAST(e.episode AS TEXT) AS id,
           CAST(length(CAST(e.episode AS TEXT)) AS BIGINT) AS n
    FROM (SELECT DISTINCT episode FROM steps WHERE episode IS NOT NULL) e
  ) h CROSS JOIN bounds b
),
-- One row: the steps dprl would refuse, counted by reason (each test is
-- written so that NULL or NaN fails it), and the episodes.
problems AS (
  SELECT r.*, x.outside_buckets
  FROM (
    SELECT
      coalesce(sum(CASE WHEN m.episode IS NULL THEN 1 ELSE 0 END), 0) AS null_episode,
      coalesce(sum(CASE WHEN m.t IS NULL THEN 1 ELSE 0 END), 0) AS null_t,
      coalesce(sum(CASE WHEN m.state IS NULL THEN 1 ELSE 0 END), 0) AS null_state,
      coalesce(sum(CASE WHEN m.reward IS NULL THEN 1 ELSE 0 END), 0) AS null_reward,
      coalesce(sum(CASE WHEN m.reward IS NULL OR m.reward - m.reward = 0 THEN 0
                        ELSE 1 END), 0) AS nonfinite_reward,
      coalesce(sum(CASE WHEN m.t IS NULL OR (m.t - m.t = 0 AND m.t = floor(m.t)) THEN 0
                        ELSE 1 END), 0) AS non_integer_t,
      coalesce(sum(CASE WHEN m.state IS NULL OR (m.state - m.state = 0 AND m.state = floor(m.state))
                        THEN 0 ELSE 1 END), 0) AS non_integer_state,
      coalesce(sum(CASE WHEN m.state IS NULL OR (m.state >= 0 AND m.state < b.n_states) THEN 0
                        ELSE 1 END), 0) AS state_out_of_range,
      coalesce(sum(m.dup), 0) AS duplicate_steps,
      coalesce(sum(CASE WHEN m.episode IS NOT NULL AND m.t IS NOT NULL AND m.state IS NOT NULL
                         AND m.reward - m.reward = 0 AND m.t - m.t = 0 AND m.t = floor(m.t)
                         AND m.state - m.state = 0 AND m.state = floor(m.state)
                         AND m.state >= 0 AND m.state < b.n_states AND m.dup = 0
                        THEN 0 ELSE 1 END), 0) AS bad_rows,
      count(DISTINCT m.episode) AS episodes
    FROM marked m CROSS JOIN bounds b
  ) r CROSS JOIN (
    SELECT coalesce(sum(CASE WHEN eb.bucket >= b.bucket_lo AND eb.bucket <= b.bucket_hi
                             THEN 0 ELSE 1 END), 0) AS outside_buckets
    FROM episode_buckets eb CROSS JOIN bounds b
  ) x
),
report AS (
  SELECT 1 - b.ok AS bad_params,
         p.null_episode, p.null_t, p.null_state, p.null_reward, p.nonfinite_reward,
         p.non_integer_t, p.non_integer_state, p.state_out_of_range, p.duplicate_steps,
         p.outside_buckets
  FROM problems p CROSS JOIN bounds b
)
SELECT * FROM report;
