-- samples/lsl.sql: DP-LSL with state aggregation on the synthetic ICU log.
-- Run from this directory:  sqlite3 :memory: < lsl.sql
.load ../dprl
.read clinic.sql
.mode box
-- Severity pairs {0,1}, {2,3}, ... share one parameter (d = 5).  DP-LSL
-- weights each state by how often it is visited (rho = 1 everywhere);
-- lambda must exceed ||Phi||^2 ||rho||_inf = 2 here.  The noise scale
-- grows like sqrt(total visits) / lambda^1.5 while the shrinkage bias is
-- about (lambda/2) / (visits of a feature): with ~300,000 steps, lambda =
-- 5000 keeps both small (the paper lets lambda grow like sqrt(m); m is
-- public, so such a schedule is allowed).
SELECT CAST(key AS INTEGER) AS state, round(value, 3) AS private_value
FROM (SELECT dp_lsl(episode, t, state, reward,
        '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5,
          "features": {"aggregate": 2}, "lambda": 5000}') AS r FROM steps),
     json_each(r, '$.values');

-- One release per clinician group (GROUP BY): clinicians 0-14 vs 15-29.
SELECT expert / 15 AS clinician_group,
       json_extract(r, '$.episodes') AS patients,
       json_extract(r, '$.theta') AS theta
FROM (SELECT expert, dp_lsl(episode, t, state, reward,
        '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5,
          "features": {"aggregate": 2}, "lambda": 5000}') AS r
      FROM steps GROUP BY expert / 15);
