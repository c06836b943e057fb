  -- The parameters by name (each use runs the subquery: use few).
@include clickhouse/params_tuple.sql
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
