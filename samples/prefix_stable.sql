-- samples/prefix_stable.sql: expert-level private release of stable
-- prefixes (dp_prefix_stable, Sharma et al. 2024).  Run from this directory:
--   sqlite3 :memory: < prefix_stable.sql
-- 300 simulated clinicians (the experts: the unit of privacy) treat 3,000
-- patients in the severity model of clinic.sql.  Each clinician has a
-- policy pi_i(a | s): escalate (a = 1) with probability 0.84..0.96 when
-- severity >= 5 and 0.03..0.07 otherwise.  dp_prefix_stable releases the
-- beginnings of trajectories that many clinicians would likely have
-- produced; a clinician's own habits stay hidden.
.load ../dprl
.mode box
CREATE TEMP TABLE experts_config AS SELECT 300 AS clinicians;
.read experts.sql

SELECT count(DISTINCT expert) AS clinicians, (SELECT count(DISTINCT episode) FROM steps) AS patients,
       (SELECT count(*) FROM steps) AS steps FROM policies;

-- The public calibration: what the release will use, from the options
-- alone (no data).  T and L are required: the number of patients examined
-- and the public maximum length (the walks stop after 20 steps).
SELECT json_extract(c, '$.accountant') AS accountant,
       round(json_extract(c, '$.eps_prime'), 4) AS eps_prime,
       round(json_extract(c, '$.threshold'), 1) AS threshold
FROM (SELECT dp_prefix_calibrate(
  '{"epsilon": 100, "delta": 1e-3, "p_min": 0.02, "T": 100, "L": 20}') AS c);

-- How much is released as epsilon grows (T = 100 patients examined,
-- L = 20, delta = 1e-3, p_min = 0.02).  With 300 experts the threshold
-- c_min/p_min + (4/eps') ln(1/delta') only falls below the largest
-- possible count (300) once epsilon is in the tens: the guarantee is per
-- clinician, and 300 clinicians are few.  eps' comes from the exact
-- composition of the T examined trajectories ("accountant": "optimal",
-- the default); the paper's printed eps' is not valid at epsilon >= 100
-- here and is refused ("accountant": "paper").
WITH eps(e) AS (VALUES (10), (30), (100), (300), (1000)),
released AS (
  SELECT e, (SELECT count(*) FROM dp_prefix_stable(
                'SELECT episode, t, state, action FROM steps',
                'SELECT expert, state, action, prob FROM policies',
                json_object('epsilon', e, 'delta', 1e-3, 'p_min', 0.02, 'T', 100, 'L', 20)))
            AS n
  FROM eps)
SELECT e AS epsilon, n AS released_transitions,
       round(n / 100.0, 2) AS mean_prefix_length
FROM released;

-- The released transitions at epsilon = 300: release is the run (1..100,
-- each drawing a patient at random, with replacement), step is 1..k; no
-- patient id or time comes out.
SELECT * FROM dp_prefix_stable(
  'SELECT episode, t, state, action FROM steps',
  'SELECT expert, state, action, prob FROM policies',
  '{"epsilon": 300, "delta": 1e-3, "p_min": 0.02, "T": 100, "L": 20}')
ORDER BY release, step LIMIT 12;
