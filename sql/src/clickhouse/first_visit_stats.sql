-- first_visit_stats.sql for ClickHouse (18.16 and later): the per-state
-- statistics of DP-LSW / DP-LSL (dp_lsw_from_stats, dp_lsl_from_stats),
-- computed where the steps are.  NOT private: as sensitive as the steps.
--
-- The same inputs, output columns, values and rules as sql/src/
-- first_visit_stats.sql (read its header): steps(episode, t, state,
-- reward), the one-row dprl_params(gamma, rmin, rmax, fmin, fmax,
-- n_states, max_states, buckets, bucket_lo, bucket_hi); one row per
-- visited state plus state 0: state, visits, return_sum, buckets,
-- bucket_lo, bucket_hi, episodes, max_states, made_with (dialect
-- "clickhouse").  return_sum is NULL in every row, made_with NULL when the
-- parameters are refused, as there.
--
-- ClickHouse 18.16 has no window functions and no CTEs, so the same block
-- arithmetic is written with arrays and nested SELECTs:
--   1. per episode: its steps sorted by t (arraySort), positions 0, 1, ...,
--      first visits (arrayEnumerateUniq = 1), the n-th first-visit
--      (arrayCumSum) for max_states, w = clamp(r) gamma^(pos mod blen);
--   2. per (episode, block of blen steps): the suffix sums of w inside the
--      block (arrayCumSum of the reversed block, in j order) and the total;
--   3. per episode: the return at the start of the next block, by Horner
--      over the next 9 blocks' totals (arrays shifted by 1..9);
--   4. per first visit: F = suffix / gamma^j + gamma^(blen - j) carried,
--      clamped to [fmin, fmax], summed per state.
-- No lambda captures an array (ClickHouse would copy it per element): each
-- stage is O(steps).  Rows with a NULL episode, t, state or reward are left
-- out of visits (their sums are NULL anyway: first_visit_check.sql counts
-- them).
WITH
@include clickhouse/bounds.sql
  ,
  (SELECT tuple(null_episode + null_t + null_state + null_reward + nonfinite_reward
                + non_integer_t + non_integer_state + state_out_of_range + duplicate_steps,
                outside_buckets, episodes)
   FROM (
@include clickhouse/problems.sql
   )) AS p_problems
SELECT s.fv_state AS state,
       toInt64(sum(s.fv_visits)) AS visits,
       CASE WHEN p_ok = 1 AND p_problems.1 = 0 AND p_problems.2 = 0
            THEN sum(s.fv_sum) END AS return_sum,
       p_buckets AS buckets, p_lo AS bucket_lo, p_hi AS bucket_hi,
       toInt64(p_problems.3) AS episodes, p_max_states AS max_states,
       p_made_with AS made_with
FROM (
  SELECT fv_state, toInt64(count()) AS fv_visits, sum(f) AS fv_sum
  FROM (
    -- 4. each first visit's return, clamped
    WITH
@include clickhouse/bounds.sql
    SELECT fv.1 AS fv_state,
           fv.3 / pow(p_g, fv.2) + pow(p_g, p_blen - fv.2) * carried AS ret,
           CASE WHEN ret < p_fmin THEN p_fmin WHEN ret > p_fmax THEN p_fmax ELSE ret END AS f
    FROM (
      SELECT blk.1 AS fvs, blk.2 AS carried
      FROM (
        -- 3. per episode, its blocks in order and what each carries in
        WITH
@include clickhouse/bounds.sql
        SELECT arraySort(x -> x.1, groupArray((blk, total, fvs))) AS blocks,
               arrayMap(x -> x.2, blocks) AS totals,
               length(totals) AS nb,
               arrayMap((a1, a2, a3, a4, a5, a6, a7, a8, a9) ->
                          a1 + p_carry * (a2 + p_carry * (a3 + p_carry * (a4 + p_carry * (
                          a5 + p_carry * (a6 + p_carry * (a7 + p_carry * (a8 + p_carry * a9))))))),
                        arrayResize(arraySlice(totals, 2), nb, 0.),
                        arrayResize(arraySlice(totals, 3), nb, 0.),
                        arrayResize(arraySlice(totals, 4), nb, 0.),
                        arrayResize(arraySlice(totals, 5), nb, 0.),
                        arrayResize(arraySlice(totals, 6), nb, 0.),
                        arrayResize(arraySlice(totals, 7), nb, 0.),
                        arrayResize(arraySlice(totals, 8), nb, 0.),
                        arrayResize(arraySlice(totals, 9), nb, 0.),
                        arrayResize(arraySlice(totals, 10), nb, 0.)) AS carries,
               arrayMap((x, c) -> (x.3, c), blocks, carries) AS out
        FROM (
          -- 2. per block: suffix sums of w in j order, the first visits kept
          SELECT episode, blk, sum(w) AS total,
                 arraySort(x -> x.1, groupArray((j, w, keep, state))) AS steps_j,
                 arrayReverse(arrayCumSum(arrayReverse(arrayMap(x -> x.2, steps_j))))
                   AS suffix,
                 arrayFilter((fv, x) -> x.3 = 1,
                             arrayMap((x, sfx) -> (x.4, x.1, sfx), steps_j, suffix), steps_j)
                   AS fvs
          FROM (
            -- 1. per episode, its steps in t order
            WITH
@include clickhouse/bounds.sql
            SELECT episode, intDiv(pos, p_blen) AS blk, pos % p_blen AS j, w, keep, state
            FROM (
              WITH
@include clickhouse/bounds.sql
              SELECT episode,
                     arraySort(x -> x.1, groupArray((assumeNotNull(t), toInt64(assumeNotNull(state)),
                                                    toFloat64(assumeNotNull(reward))))) AS a,
                     arrayMap(x -> x.2, a) AS states,
                     arrayMap(x -> x - 1, arrayEnumerate(a)) AS positions,
                     arrayMap(x -> x = 1, arrayEnumerateUniq(states)) AS is_first,
                     -- the episode's first k first-visits (max_states = k)
                     arrayMap((f, nth) -> f = 1 AND (p_max_states IS NULL OR nth <= p_max_states),
                              is_first, arrayCumSum(is_first)) AS kept,
                     arrayMap((x, pos) -> CASE WHEN x.3 < p_rmin THEN p_rmin
                                               WHEN x.3 > p_rmax THEN p_rmax
                                               ELSE x.3 END * pow(p_g, pos % p_blen),
                              a, positions) AS ws
              FROM steps
              WHERE episode IS NOT NULL AND t IS NOT NULL AND state IS NOT NULL
                AND reward IS NOT NULL
              GROUP BY episode
            )
            ARRAY JOIN positions AS pos, ws AS w, kept AS keep, states AS state
          )
          GROUP BY episode, blk
        )
        GROUP BY episode
      )
      ARRAY JOIN out AS blk
    )
    ARRAY JOIN fvs AS fv
  )
  GROUP BY fv_state
  UNION ALL
  SELECT toInt64(0), toInt64(0), toFloat64(0)
) s
GROUP BY s.fv_state
ORDER BY s.fv_state
