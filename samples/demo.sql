-- samples/demo.sql: what `make demo` runs (from this directory).
-- A private estimate of the value of each severity state under the
-- clinicians' logged policy, by DP-LSW, from the synthetic ICU log.
.load ../dprl
.read clinic.sql
.mode box
SELECT dprl_version() AS dprl, count(*) AS steps, count(DISTINCT episode) AS patients
FROM steps;

-- Plan first (reads no data): the expected error of each released value
-- for guessed visit counts, under both perturbations.
SELECT json_extract(p, '$.output.rms_error')     AS planned_error_output,
       json_extract(p, '$.statistics.rms_error') AS planned_error_statistics
FROM (SELECT dp_plan('{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5,
                       "episodes": 20000,
                       "visits": [10000, 15000, 15000, 15000, 15000, 15000, 10000, 5000, 3000, 1000]}') AS p);

-- One private release (epsilon = 1, delta = 1e-5), noise on the per-state
-- statistics.  Every patient's trajectory is protected: replacing one
-- patient's rows changes the distribution of this output by at most
-- e^epsilon (plus delta).  gamma = 0.9 per 4-hour step; rewards are in
-- [0, 1] (rmax = 1).  Stays are capped at 20 steps, so no return exceeds
-- 1 + 0.9 + ... + 0.9^19 = 8.78: fmax = 9 is a public bound.
CREATE TEMP TABLE release AS
SELECT dp_lsw(episode, t, state, reward,
  '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5,
    "perturb": "statistics"}') AS result
FROM steps;

SELECT json_extract(result, '$.mechanism') AS mechanism,
       json_extract(result, '$.perturb')   AS perturb,
       json_extract(result, '$.private')   AS private,
       json_extract(result, '$.epsilon')   AS epsilon,
       json_extract(result, '$.episodes')  AS episodes,
       round(json_extract(result, '$.sigma'), 1) AS sigma
FROM release;

-- The released values, one row per state, with their standard errors
-- (computed from the noisy release: publishable).  For comparison only,
-- the exact first-visit estimate and the paper's output perturbation at
-- the same epsilon: the exact column is NOT private and must not be
-- published.
WITH private AS (
  SELECT CAST(v.key AS INTEGER) AS state, v.value AS private_value, se.value AS se,
         n.value AS noisy_visits
  FROM release, json_each(result, '$.values') AS v, json_each(result, '$.se') AS se,
       json_each(result, '$.visits') AS n
  WHERE se.key = v.key AND n.key = v.key
), exact AS (
  SELECT CAST(key AS INTEGER) AS state, value AS exact_not_private
  FROM (SELECT dp_lsw(episode, t, state, reward,
          '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5,
            "release": "diagnostic"}') AS d FROM steps), json_each(d, '$.returns')
), paper AS (
  SELECT CAST(key AS INTEGER) AS state, value AS paper_value
  FROM (SELECT dp_lsw(episode, t, state, reward,
          '{"n_states": 10, "gamma": 0.9, "rmin": 0, "rmax": 1, "fmax": 9, "epsilon": 1, "delta": 1e-5}') AS d
        FROM steps), json_each(d, '$.values')
)
SELECT state, round(private_value, 3) AS private_value, round(se, 3) AS std_error,
       round(noisy_visits) AS noisy_visits, round(exact_not_private, 3) AS exact_not_private,
       round(paper_value, 3) AS output_perturbation
FROM private JOIN exact USING (state) JOIN paper USING (state) ORDER BY state;

.mode list
SELECT 'private_value: released at epsilon = 1 (noise on the per-state statistics); '
    || 'std_error: its standard error, from the release alone; exact_not_private: the '
    || 'estimate without privacy, shown only to judge the error; output_perturbation: the '
    || 'paper''s mechanism at the same epsilon (one sigma set by the rarest state).' AS what_the_numbers_mean;
