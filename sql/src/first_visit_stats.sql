-- first_visit_stats.sql: the per-state statistics of DP-LSW / DP-LSL
-- (dp_lsw_from_stats, dp_lsl_from_stats), computed where the steps are.
-- NOT private: as sensitive as the steps themselves.
--
-- Input: a table (or view) steps(episode, t, state, reward), one row per
-- step, and a one-row table dprl_params(gamma, rmin, rmax, fmin, fmax,
-- n_states, max_states, buckets, bucket_lo, bucket_hi) with the public
-- options (rmin, rmax required; NULL fmin/fmax: dprl's defaults; NULL max_states: no
-- contribution bound; buckets NULL: 1, unsharded).
-- Output: one row per visited state, plus a row for state 0 (0 visits
-- when it is not visited), so a shard with no episodes still has a row:
--   state, visits      episodes that visit the state
--          return_sum  sum of their first-visit returns
--          buckets, bucket_lo, bucket_hi   the shard's bucket range (echoed)
--          episodes    count(DISTINCT episode) of this shard (m is public)
--          max_states  the contribution bound applied (echoed; NULL: none),
--                      which dp_lsw_from_stats checks against its option
--          made_with   what the statistics were made with, a JSON object:
--                      {"gamma", "rmin", "rmax", "fmin", "fmax" (the values
--                      used, defaults applied), "n_states", "max_states",
--                      "dialect", "version"}; doubles printed to read back
--                      exactly; NULL when the parameters are refused.  Pass
--                      it to dp_lsw_from_stats in the max_states position:
--                      each parameter must equal its option.
-- Exactly dprl's rules: steps of an episode in t order (gaps in t do not
-- count), rewards clamped to [rmin, rmax], G_t = r_t + gamma G_{t+1},
-- first visit = smallest t, F clamped to [fmin, fmax], and with
-- max_states = k only the first k first-visits of each episode (in t order).
-- return_sum is NULL in every row (and dp_lsw_from_stats refuses it) when
-- dprl would refuse the parameters or a step (NULL, NaN or infinite
-- values, t or state not an integer, state outside 0..n_states-1, a
-- duplicate (episode, t)), or when an episode's bucket is outside
-- bucket_lo..bucket_hi: first_visit_check.sql says which.
--
-- Numerics: inside a block of blen steps G_t is the suffix sum of
-- gamma^j r divided by gamma^j (gamma^j > 1e-40); the return at the start
-- of the next block is carried in (Horner over the next 9 blocks; more
-- would add terms below gamma^(9 blen) < 1e-359 of the largest reward).
-- No episode length limit.  (A nonzero reward below 1e-260 in magnitude
-- loses relative precision: gamma^j r is then a subnormal double.)
WITH
@include params.sql
@include rows.sql
weighted AS (
  SELECT m.episode, m.state, m.nth_visit, m.pos,
         (m.pos - m.pos % b.blen) / b.blen AS blk,
         m.pos % b.blen AS j,
         CASE WHEN m.reward < b.rmin THEN b.rmin
              WHEN m.reward > b.rmax THEN b.rmax
              ELSE m.reward END * power(b.g, m.pos % b.blen) AS w
  FROM marked m CROSS JOIN bounds b
),
block_sums AS (
  SELECT episode, blk, sum(w) AS total FROM weighted GROUP BY episode, blk
),
-- carried = the return at the start of the next block
carries AS (
  SELECT k.episode, k.blk,
         coalesce(lead(k.total, 1) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry * (
         coalesce(lead(k.total, 2) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry * (
         coalesce(lead(k.total, 3) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry * (
         coalesce(lead(k.total, 4) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry * (
         coalesce(lead(k.total, 5) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry * (
         coalesce(lead(k.total, 6) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry * (
         coalesce(lead(k.total, 7) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry * (
         coalesce(lead(k.total, 8) OVER (PARTITION BY k.episode ORDER BY k.blk), 0) + b.carry *
         coalesce(lead(k.total, 9) OVER (PARTITION BY k.episode ORDER BY k.blk), 0)))))))) AS carried
  FROM block_sums k CROSS JOIN bounds b
),
-- Each block's carried value joins its steps through a window, not a join
-- (a join's plan depends on the engine's guesses; this is one sort):
-- suffix = sum over the rest of the block of gamma^j r.
suffixes AS (
  SELECT x.episode, x.state, x.nth_visit, x.pos, x.j,
         sum(x.w) OVER (PARTITION BY x.episode, x.blk ORDER BY x.j DESC
                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS suffix,
         max(x.carried) OVER (PARTITION BY x.episode, x.blk) AS carried
  FROM (
    SELECT episode, blk, state, nth_visit, pos, j, w, CAST(NULL AS DOUBLE PRECISION) AS carried
    FROM weighted
    UNION ALL
    SELECT episode, blk, NULL, NULL, NULL, NULL, NULL, carried FROM carries
  ) x
),
-- nth_state: 1 for the episode's first first-visit, 2 for the next, ...
first_visits AS (
  SELECT r.state,
         CASE WHEN r.ret < b.fmin THEN b.fmin WHEN r.ret > b.fmax THEN b.fmax
              ELSE r.ret END AS f
  FROM (
    SELECT u.state, u.suffix / power(b.g, u.j) + power(b.g, b.blen - u.j) * u.carried AS ret,
           row_number() OVER (PARTITION BY u.episode ORDER BY u.pos) AS nth_state
    FROM suffixes u CROSS JOIN bounds b
    WHERE u.nth_visit = 1
  ) r CROSS JOIN bounds b
  WHERE b.max_states IS NULL OR r.nth_state <= b.max_states
),
made AS (
  SELECT CASE WHEN b.ok = 1 THEN
           '{"gamma":' || REAL_TEXT(b.gamma) || ',"rmin":' || REAL_TEXT(b.rmin)
           || ',"rmax":' || REAL_TEXT(b.rmax) || ',"fmin":' || REAL_TEXT(b.fmin)
           || ',"fmax":' || REAL_TEXT(b.fmax) || ',"n_states":' || CAST(b.n_states AS TEXT)
           || ',"max_states":' || coalesce(CAST(b.max_states AS TEXT), 'null')
           || ',"dialect":"@DIALECT@","version":"@VERSION@"}' END AS made_with
  FROM bounds b
),
per_state AS (
  SELECT state, count(*) AS visits, sum(f) AS return_sum
  FROM first_visits GROUP BY state
  UNION ALL
  SELECT CAST(0 AS BIGINT), CAST(0 AS BIGINT), CAST(0 AS DOUBLE PRECISION) FROM bounds
)
SELECT s.state,
       CAST(sum(s.visits) AS BIGINT) AS visits,
       CASE WHEN min(b.ok) = 1 AND min(p.bad_rows) = 0 AND min(p.outside_buckets) = 0
            THEN sum(s.return_sum) END AS return_sum,
       min(b.buckets) AS buckets, min(b.bucket_lo) AS bucket_lo, min(b.bucket_hi) AS bucket_hi,
       min(p.episodes) AS episodes, min(b.max_states) AS max_states,
       min(w.made_with) AS made_with
FROM per_state s CROSS JOIN bounds b CROSS JOIN problems p CROSS JOIN made w
GROUP BY s.state
ORDER BY s.state;
