-- samples/demo.sql: what `make demo` runs (from this directory).
-- A private estimate of the value of each severity state under the
-- clinicians' logged policy, by DP-LSW, from the synthetic ICU log.
.load ../dprl
.read clinic.sql
.mode box
SELECT dprl_version() AS dprl, count(*) AS steps, count(DISTINCT episode) AS patients
FROM steps;

-- One private release (epsilon = 1, delta = 1e-5).  Every patient's
-- trajectory is protected: replacing one patient's rows changes the
-- distribution of this output by at most e^epsilon (plus delta).
-- gamma = 0.9 per 4-hour step; rewards are in [0, 1] (rmax = 1).  Stays are
-- capped at 20 steps, so no return exceeds 1 + 0.9 + ... + 0.9^19 = 8.78:
-- fmax = 9 is a public bound (rmax / (1 - gamma) = 10 would also be valid).
CREATE TEMP TABLE release AS
SELECT dp_lsw(episode, t, state, reward,
  '{"n_states": 10, "gamma": 0.9, "fmax": 9, "epsilon": 1, "delta": 1e-5}') AS result
FROM steps;

SELECT json_extract(result, '$.mechanism') AS mechanism,
       json_extract(result, '$.private')   AS private,
       json_extract(result, '$.epsilon')   AS epsilon,
       json_extract(result, '$.episodes')  AS episodes
FROM release;

-- The released values, one row per state (json_each turns them into rows).
-- For comparison only, the exact first-visit estimate: that column is NOT
-- private and must not be published.
WITH private AS (
  SELECT CAST(key AS INTEGER) AS state, value AS private_value
  FROM release, json_each(result, '$.values')
), exact AS (
  SELECT CAST(key AS INTEGER) AS state, value AS exact_not_private
  FROM (SELECT dp_lsw(episode, t, state, reward,
          '{"n_states": 10, "gamma": 0.9, "fmax": 9, "epsilon": 1, "delta": 1e-5,
            "release": "diagnostic"}') AS d FROM steps), json_each(d, '$.returns')
)
SELECT state, round(private_value, 3) AS private_value,
       round(exact_not_private, 3) AS exact_not_private
FROM private JOIN exact USING (state) ORDER BY state;
