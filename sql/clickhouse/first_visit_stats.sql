-- clickhouse: written by sql/gen_dialects.py from sql/src/clickhouse/first_visit_stats.sql; edit the source, not this file.
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
-- arithmetic (blocks of blen = ceil(92 / ln(1/gamma)) steps, gamma^j >=
-- e^-92 inside one; the return at the start of the next block carried in
-- by Horner over the next 9 blocks' totals) is written with arrays and
-- nested SELECTs, reading the steps ONCE:
--   1. one GROUP BY episode: its steps (t, state, clamped reward: one array
--      each) and its refused rows (NULL, NaN or infinite values, t or state
--      not an integer, state outside 0..n_states-1);
--   2. per episode: the steps sorted by t; duplicate t (equal neighbours
--      once sorted); the episode's bucket, outside bucket_lo..bucket_hi or
--      not; positions 0, 1, ...; first visits (arrayEnumerateUniq = 1) and
--      the first k of them kept (max_states = k); w = clamped reward x
--      gamma^(pos mod blen).
--      An episode of at most blen steps is one block: G = suffix sum of w /
--      gamma^pos, F = G clamped to [fmin, fmax], computed here.
--      A longer one (n > blen): segments cut at each block start and kept
--      first visit; per segment the sum of w, from its end (sumMap by
--      segment); the block totals from the segment sums; the return each
--      block carries in (Horner); as items for step 3 (no step is copied):
--      per kept first visit (block, j, state, its segment's sum), per block
--      what it carries in;
--   3. the items of the longer episodes grouped by (episode, block): the
--      suffix sums over the block's first visits (sorted by position), F =
--      suffix / gamma^j + gamma^(blen - j) x carried, clamped; the shorter
--      episodes' F summed by state (sumMap), and their refused rows,
--      buckets and episodes counted, in the same GROUP BY;
--   4. one row: sumMap by state of the visits and F, the counts; then one
--      row per state (ARRAY JOIN), state 0 added when not visited.
-- Work: O(n log n) per episode of n steps (the sort), the rest O(n) array
-- operations; an episode longer than blen adds O(n log m) (sumMap over
-- its m <= ceil(n / blen) + k segments, k its kept first visits) and
-- ceil(n / blen) + k rows to step 3.  Worst case: blen = 1 (gamma = 0, or
-- refused parameters): one row of step 3 per step, plus k (the per-step
-- regroup did as much before).  Memory: a node's episodes pass step 2
-- together, some 20 arrays of n values each (about 160 bytes a step).
-- No lambda reads a column or an aggregate (ClickHouse 18.16 loses
-- those): a scalar enters a lambda as an array (arrayResize).  The
-- parameters (params_tuple.sql) are named twice: in the scan and in step 4.
-- Rows with a NULL episode, t, state or reward are left out of visits
-- (their sums are NULL anyway: first_visit_check.sql counts them).
SELECT state,
       toInt64(visits1) AS visits,
       CASE WHEN tupleElement(prm4, 1) = 1 AND bad_rows = 0 AND outside_buckets = 0
            THEN sum1 END AS return_sum,
       tupleElement(prm4, 11) AS buckets, tupleElement(prm4, 12) AS bucket_lo,
       tupleElement(prm4, 13) AS bucket_hi,
       toInt64(episodes1) AS episodes, tupleElement(prm4, 10) AS max_states,
       tupleElement(prm4, 14) AS made_with
FROM (
  -- 4. one row: visits and the sum of F by state, state 0 always there;
  --    the parameters (params_tuple.sql, named once here: ok, buckets,
  --    bucket_lo, bucket_hi, max_states, made_with)
  SELECT tupleElement(byst, 1) AS ks, tupleElement(byst, 2) AS vs, tupleElement(byst, 3) AS ss,
         if(has(ks, toInt64(0)), ks, arrayConcat([toInt64(0)], ks)) AS states0,
         if(has(ks, toInt64(0)), vs, arrayConcat([toUInt64(0)], vs)) AS visits0,
         if(has(ks, toInt64(0)), ss, arrayConcat([0.], ss)) AS sums0,
         bad_rows, outside_buckets, episodes1,
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
           AS prm4
  FROM (
    SELECT sumMap(out_states, out_visits, out_sums) AS byst,
           sum(bad_g) AS bad_rows, sum(outside_g) AS outside_buckets,
           sum(episodes_g) AS episodes1
    FROM (
      -- 3b. per block of a longer episode: its kept first visits by
      --     position, the suffix sums of their segments, F
      SELECT bad_g, outside_g, episodes_g,
             arrayConcat(tupleElement(sm, 1), fst) AS out_states,
             arrayConcat(tupleElement(sm, 2), arrayResize(emptyArrayUInt64(), nf, toUInt64(1)))
               AS out_visits,
             arrayConcat(tupleElement(sm, 3),
                         arrayMap((s, j, gg, bl, c, lo, hi) ->
                                    least(greatest(s / pow(gg, j) + pow(gg, bl - j) * c, lo), hi),
                                  sfx, fj, arrayResize(emptyArrayFloat64(), nf, g3),
                                  arrayResize(emptyArrayInt64(), nf, blen3),
                                  arrayResize(emptyArrayFloat64(), nf, carried),
                                  arrayResize(emptyArrayFloat64(), nf, fmin3),
                                  arrayResize(emptyArrayFloat64(), nf, fmax3))) AS out_sums
      FROM (
        SELECT bad_g, outside_g, episodes_g, sm, g3, blen3, fmin3, fmax3, carried,
               length(sfv) AS nf,
               arrayMap(x -> tupleElement(x, 1), sfv) AS fj,
               arrayMap(x -> tupleElement(x, 2), sfv) AS fst,
               arrayReverse(arrayCumSum(arrayReverse(arrayMap(x -> tupleElement(x, 3), sfv)))) AS sfx
        FROM (
          -- 3. the items by (episode, block) for the longer episodes; kind 0
          --    (one per episode: its short-episode F, counts) all in one group
          SELECT kind > 0 AS mk, if(mk, episode, defaultValueOfArgumentType(episode)) AS ek,
                 tupleElement(it, 2) AS bk,
                 sumMap(fv_states, fv_ones, fv_f) AS sm,
                 sumIf(bad, kind = 0) AS bad_g, sumIf(outside, kind = 0) AS outside_g,
                 sumIf(is_episode, kind = 0) AS episodes_g,
                 arraySort(x -> tupleElement(x, 1),
                           groupArrayIf((tupleElement(it, 3), tupleElement(it, 4),
                                         tupleElement(it, 5)), kind = 1)) AS sfv,
                 sumIf(tupleElement(it, 6), kind = 2) AS carried,
                 any(g) AS g3, any(blen) AS blen3, any(fmin) AS fmin3, any(fmax) AS fmax3
          FROM (
            SELECT episode, g, blen, fmin, fmax, bad, outside, is_episode, it,
                   tupleElement(it, 1) AS kind, fv_states, fv_ones, fv_f
            FROM (
              -- 2f. items: kind 0 (one), kind 1 per kept first visit of a
              --     longer episode (block, j, state, sum of w to the next
              --     cut), kind 2 per block (what it carries in)
              SELECT episode, g, blen, fmin, fmax, bad, outside, is_episode,
                     fv_states, fv_ones, fv_f,
                     arrayConcat([(toUInt8(0), toInt64(0), toInt64(0), toInt64(0), 0., 0.)],
                                 arrayFilter((x, k) -> k = 1,
                                             arrayMap((b, j, s, u) -> (toUInt8(1), toInt64(b),
                                                                       toInt64(j), s, u, 0.),
                                                      sblk, sj, sst, segsum),
                                             skeep),
                                 arrayMap((b, c) -> (toUInt8(2), toInt64(b), toInt64(0),
                                                     toInt64(0), 0., c),
                                          range(nb), carries)) AS items
              FROM (
                -- 2e. the return each block carries in: Horner over the
                --     next 9 totals (0 past the end)
                SELECT episode, g, blen, fmin, fmax, bad, outside, is_episode,
                       fv_states, fv_ones, fv_f, segsum, sblk, sj, sst, skeep,
                       length(totals) AS nb,
                       arrayMap((c, a1, a2, a3, a4, a5, a6, a7, a8, a9) ->
                                  a1 + c * (a2 + c * (a3 + c * (a4 + c * (
                                  a5 + c * (a6 + c * (a7 + c * (a8 + c * a9))))))),
                                arrayResize(emptyArrayFloat64(), nb, carry),
                                arrayResize(arraySlice(totals, 2), nb, 0.),
                                arrayResize(arraySlice(totals, 3), nb, 0.),
                                arrayResize(arraySlice(totals, 4), nb, 0.),
                                arrayResize(arraySlice(totals, 5), nb, 0.),
                                arrayResize(arraySlice(totals, 6), nb, 0.),
                                arrayResize(arraySlice(totals, 7), nb, 0.),
                                arrayResize(arraySlice(totals, 8), nb, 0.),
                                arrayResize(arraySlice(totals, 9), nb, 0.),
                                arrayResize(arraySlice(totals, 10), nb, 0.)) AS carries
                FROM (
                 -- 2e'. the block totals: its segments' sums, from the last
                 --      (sumMap by block; every block has a segment)
                 SELECT episode, g, blen, carry, fmin, fmax, bad, outside, is_episode,
                        fv_states, fv_ones, fv_f, segsum, sblk, sj, sst, skeep,
                        tupleElement(arrayReduce('sumMap', [arrayReverse(sblk)],
                                                 [arrayResize(emptyArrayUInt64(), length(sblk),
                                                              toUInt64(1))],
                                                 [arrayReverse(segsum)]), 3) AS totals
                 FROM (
                  -- 2d. a longer episode: segments, cut at each block start
                  --     and kept first visit; per segment the sum of w from
                  --     its end (sumMap by segment), its block, j, state, kept
                  SELECT episode, g, blen, carry, fmin, fmax, bad, outside, is_episode,
                         fv_states, fv_ones, fv_f,
                         tupleElement(arrayReduce('sumMap', [arrayReverse(arrayCumSum(cut))],
                                                  [mones], [arrayReverse(mw)]), 3) AS segsum,
                         arrayFilter((x, c) -> c, mblk, cut) AS sblk,
                         arrayFilter((x, c) -> c, mj, cut) AS sj,
                         arrayFilter((x, c) -> c, mst, cut) AS sst,
                         arrayFilter((x, c) -> c, mkeep, cut) AS skeep
                  FROM (
                   SELECT episode, g, blen, carry, fmin, fmax, bad, outside, is_episode,
                          fv_states, fv_ones, fv_f, mw, mblk, mj, mst, mkeep, mones,
                          arrayMap((j, k) -> j = 0 OR k = 1, mj, mkeep) AS cut
                   FROM (
                  -- 2c. one block: F = G clamped; longer: block and j
                    SELECT episode, g, blen, carry, fmin, fmax, bad, outside, is_episode,
                           if(multi, emptyArrayInt64(), sf_states) AS fv_states,
                           arrayResize(emptyArrayUInt64(), length(fv_states), toUInt64(1)) AS fv_ones,
                           if(multi, emptyArrayFloat64(),
                              arrayMap((s, p, gg, lo, hi) -> least(greatest(s / pow(gg, p), lo), hi),
                                       sf_sum, sf_pos,
                                       arrayResize(emptyArrayFloat64(), length(sf_pos), g),
                                       arrayResize(emptyArrayFloat64(), length(sf_pos), fmin),
                                       arrayResize(emptyArrayFloat64(), length(sf_pos), fmax)))
                             AS fv_f,
                           mw, mst, mkeep,
                           arrayMap((p, b) -> intDiv(p, b), mpos,
                                    arrayResize(emptyArrayInt64(), length(mpos), blen)) AS mblk,
                           arrayMap((p, b) -> p % b, mpos,
                                    arrayResize(emptyArrayInt64(), length(mpos), blen)) AS mj,
                           arrayResize(emptyArrayUInt64(), length(mpos), toUInt64(1)) AS mones
                    FROM (
                      -- 2b. the kept first visits: suffix sums of w (one
                      --     block), states, positions; a longer episode's
                      --     arrays go on (m...), else empty ones
                      SELECT episode, g, blen, carry, fmin, fmax, bad, outside, is_episode, multi,
                             arrayFilter((x, k) -> k, arrayReverse(arrayCumSum(arrayReverse(w))), keep)
                               AS sf_sum,
                             arrayFilter((x, k) -> k, st, keep) AS sf_states,
                             arrayFilter((x, k) -> k, pos, keep) AS sf_pos,
                             if(multi, w, emptyArrayFloat64()) AS mw,
                             if(multi, pos, emptyArrayUInt64()) AS mpos,
                             if(multi, keep, emptyArrayUInt8()) AS mkeep,
                             if(multi, st, emptyArrayInt64()) AS mst
                      FROM (
                        -- 2a'. w = clamped reward x gamma^(pos mod blen); kept:
                        --      a first visit among the first k (max_states)
                        SELECT episode, g, blen, carry, fmin, fmax, bad, outside, is_episode,
                               multi, st, pos,
                               arrayMap((r, p, gg, b) -> r * pow(gg, p % b), rr, pos,
                                        arrayResize(emptyArrayFloat64(), len, g),
                                        arrayResize(emptyArrayInt64(), len, blen)) AS w,
                               arrayMap((f, c, k) -> f = 1 AND c <= k, fv, arrayCumSum(fv),
                                        arrayResize(emptyArrayInt64(), len, kmax)) AS keep
              FROM (
                -- 2a. per episode: steps in t order, duplicate t counted,
                --     first visits, the bucket
                SELECT episode, g, blen, carry, fmin, fmax, kmax,
                       length(ts) AS len, len > blen AS multi,
                       arraySort(ts) AS tsorted,
                       arraySort((x, y) -> y, sts, ts) AS st,
                       arraySort((x, y) -> y, rs, ts) AS rr,
                       range(len) AS pos,
                       arrayMap(x -> toUInt8(x = 1), arrayEnumerateUniq(st)) AS fv,
                       -- (arrayDifference starts with a 0; equal neighbours: 0)
                       bad_e + arrayCount(x -> x = 0, arrayDifference(tsorted)) - (len > 0)
                         AS bad,
                       episode IS NOT NULL AS is_episode,
                       CASE WHEN episode IS NULL THEN 0
                            WHEN ifNull(bucket >= lo AND bucket <= hi, 0) THEN 0
                            ELSE 1 END AS outside
                FROM (
                 SELECT episode, g, blen, carry, fmin, fmax, kmax, lo, hi, ts, sts, rs, bad_e,
                        -- the bucket hash of sql/src/buckets.sql (lengthUTF8: characters)
                        CASE WHEN buckets = 1 THEN toInt64(0)
                             ELSE toInt64((h.n * 48271
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
            + (h.n - lengthUTF8(replaceAll(h.id, 'Z', ''))) * 59155) % greatest(buckets, 1)) END AS bucket
                 FROM (
                  -- 1. one scan: per episode its steps (no lambda here
                  --    reads a column) and its refused rows
                  SELECT episode, toString(episode) AS id,
                         toInt64(lengthUTF8(toString(episode))) AS n,
                         any(tupleElement(prm, 2)) AS g, any(tupleElement(prm, 3)) AS blen,
                         any(tupleElement(prm, 4)) AS carry, any(tupleElement(prm, 7)) AS fmin,
                         any(tupleElement(prm, 8)) AS fmax,
                         any(ifNull(tupleElement(prm, 10), toInt64(9223372036854775807))) AS kmax,
                         any(tupleElement(prm, 11)) AS buckets, any(tupleElement(prm, 12)) AS lo,
                         any(tupleElement(prm, 13)) AS hi,
                         groupArrayIf(tv, usable) AS ts, groupArrayIf(sv, usable) AS sts,
                         groupArrayIf(rv, usable) AS rs, sum(refused) AS bad_e
                  FROM (
                    SELECT episode, prm,
                           episode IS NOT NULL AND t IS NOT NULL AND state IS NOT NULL
                             AND reward IS NOT NULL AS usable,
                           assumeNotNull(t) AS tv, toInt64(assumeNotNull(state)) AS sv,
                           toFloat64(assumeNotNull(reward)) AS r0,
                           CASE WHEN r0 < tupleElement(prm, 5) THEN tupleElement(prm, 5)
                                WHEN r0 > tupleElement(prm, 6) THEN tupleElement(prm, 6)
                                ELSE r0 END AS rv,
                           -- refused (each test written so that NULL or NaN fails it)
                           1 - ifNull(episode IS NOT NULL AND isFinite(reward)
                                        AND isFinite(t) AND t = floor(t)
                                        AND isFinite(state) AND state = floor(state)
                                        AND state >= 0 AND state < tupleElement(prm, 9), 0)
                             AS refused
                    FROM (
                      -- prm: the parameters (params_tuple.sql)
                      SELECT episode, t, state, reward,
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
                               AS prm
                      FROM steps
                    )
                  )
                  GROUP BY episode
                 ) h
                )
                )
                )
              )
            )
          )
        )
      )
    )
  )
            ARRAY JOIN items AS it
          )
          GROUP BY mk, ek, bk
        )
      )
    )
  )
)
ARRAY JOIN states0 AS state, visits0 AS visits1, sums0 AS sum1
ORDER BY state
