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
CREATE TABLE policies(expert INTEGER, state INTEGER, action INTEGER, prob REAL);
INSERT INTO policies
WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 299),
     s(state) AS (SELECT 0 UNION ALL SELECT state + 1 FROM s WHERE state < 9),
     esc AS (SELECT i, state,
               CASE WHEN state >= 5 THEN 0.90 + 0.02 * ((i % 7) - 3)
                    ELSE 0.05 + 0.01 * ((i % 5) - 2) END AS p
             FROM c, s)
SELECT i, state, 1, p FROM esc UNION ALL SELECT i, state, 0, 1.0 - p FROM esc;

CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER, action INTEGER);
INSERT INTO steps
WITH RECURSIVE
  patients(episode, seed) AS (
    SELECT 1, 7919 UNION ALL
    SELECT episode + 1, 1 + ((episode + 1) * 7919) % 2147483646 FROM patients WHERE episode < 3000),
  walk(episode, t, state, x, expert) AS (
    SELECT episode, 0, 3 + (seed * 48271 % 2147483647) % 6,
           seed * 48271 % 2147483647 * 48271 % 2147483647, episode % 300
    FROM patients
    UNION ALL
    SELECT w.episode, w.t + 1,
           max(0, min(9, w.state + CASE
             WHEN (w.x % 1000) < 1000 * p.prob THEN -1 - ((w.x / 1000) % 2)
             WHEN (w.x / 1000) % 100 < 40 THEN -1
             WHEN (w.x / 1000) % 100 < 75 THEN 0 ELSE 1 END)),
           w.x * 48271 % 2147483647, w.expert
    FROM walk w JOIN policies p
      ON p.expert = w.expert AND p.state = w.state AND p.action = 1
    WHERE w.t < 19 AND w.state BETWEEN 1 AND 8)
SELECT w.episode, w.t, w.state,
       CASE WHEN (w.x % 1000) < 1000 * p.prob THEN 1 ELSE 0 END
FROM walk w JOIN policies p ON p.expert = w.expert AND p.state = w.state AND p.action = 1;

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

-- The released transitions at epsilon = 300: release numbers the released
-- prefixes in the (random) order they were examined, step is 1..k; no
-- patient id or time comes out.
SELECT * FROM dp_prefix_stable(
  'SELECT episode, t, state, action FROM steps',
  'SELECT expert, state, action, prob FROM policies',
  '{"epsilon": 300, "delta": 1e-3, "p_min": 0.02, "T": 100, "L": 20}')
ORDER BY release, step LIMIT 12;
