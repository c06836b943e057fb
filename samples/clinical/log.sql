-- samples/clinical/log.sql: the clinicians' log, sampled from the MDP of
-- model.sql (run that first) reproducibly in plain SQL: a MINSTD generator
-- (x -> 48271 x mod 2^31 - 1) carried through a recursive CTE, one stream
-- per patient and per clinician, as in samples/clinic.sql.
--
-- The sizes come from temp.clinical_config (created here with the defaults
-- unless the caller made it first):
--   patients     episodes; patient e is treated by clinician (e - 1) mod clinicians
--   clinicians   how many clinicians (experts)
--   seed         another seed gives another log of the same model
--   max_steps    a stay still open after this many days leaves the log (reward 0)
-- The patients' log: 20,000 patients, 30 clinicians (the defaults).
-- The clinicians' log: 200 clinicians x 50 patients:
--   CREATE TEMP TABLE clinical_config AS
--     SELECT 10000 AS patients, 200 AS clinicians, 1 AS seed, 30 AS max_steps;
--
-- Each clinician escalates by habit: with probability p_high (per mille)
-- at severity >= their threshold, p_low below it.  Thresholds are 5 (a
-- quarter of clinicians), 6 (half) or 7 (a quarter); p_high in 800..950,
-- p_low in 20..100, all drawn from the clinician's own stream.
--
-- Tables:
--   log_config(patients, clinicians, seed, max_steps)   the sizes used
--   clinicians(expert, threshold, p_low, p_high)
--   clinician_policy(expert, state, action, prob)   each clinician's pi_i(a | s)
--   steps(episode, t, state, action, reward, expert, propensity)
--     propensity = the treating clinician's probability of the action taken
CREATE TEMP TABLE IF NOT EXISTS clinical_config AS
  SELECT 20000 AS patients, 30 AS clinicians, 1 AS seed, 30 AS max_steps;

DROP TABLE IF EXISTS log_config;
DROP TABLE IF EXISTS clinicians;
DROP TABLE IF EXISTS clinician_policy;
DROP TABLE IF EXISTS steps;

-- the sizes this log was made with, kept with it
CREATE TABLE log_config AS SELECT patients, clinicians, seed, max_steps FROM temp.clinical_config;

CREATE TABLE clinicians(expert INTEGER PRIMARY KEY, threshold INTEGER NOT NULL,
                        p_low INTEGER NOT NULL, p_high INTEGER NOT NULL);
INSERT INTO clinicians
WITH RECURSIVE
  -- one stream per clinician: its seed y is the next output of a master
  -- generator (multiplier 16807); its draws x1, x2, x3 follow with 48271
  c(expert, y) AS (
    SELECT 0, 1 + (104729 * (SELECT seed FROM temp.clinical_config) + 54321) % 2147483646
    UNION ALL
    SELECT expert + 1, y * 16807 % 2147483647 FROM c
    WHERE expert < (SELECT clinicians FROM temp.clinical_config) - 1),
  d(expert, x1, x2, x3) AS (
    SELECT expert, y * 48271 % 2147483647, y * 48271 % 2147483647 * 48271 % 2147483647,
           y * 48271 % 2147483647 * 48271 % 2147483647 * 48271 % 2147483647
    FROM c)
SELECT expert,
       CASE WHEN x1 % 100 < 25 THEN 5 WHEN x1 % 100 < 75 THEN 6 ELSE 7 END,
       20 + x2 % 81,
       800 + x3 % 151
FROM d;

CREATE TABLE clinician_policy(expert INTEGER, state INTEGER, action INTEGER, prob REAL,
                              PRIMARY KEY (expert, state, action));
INSERT INTO clinician_policy
WITH RECURSIVE s(state) AS (SELECT 0 UNION ALL SELECT state + 1 FROM s WHERE state < 9),
  e AS (SELECT expert, state,
               CASE WHEN state >= threshold THEN p_high ELSE p_low END AS esc
        FROM clinicians, s)
SELECT expert, state, 1, esc / 1000.0 FROM e
UNION ALL SELECT expert, state, 0, (1000 - esc) / 1000.0 FROM e;

CREATE TABLE steps(
  episode INTEGER NOT NULL,
  t INTEGER NOT NULL,
  state INTEGER NOT NULL,
  action INTEGER NOT NULL,
  reward REAL NOT NULL,
  expert INTEGER NOT NULL,
  propensity REAL NOT NULL,
  PRIMARY KEY (episode, t));

-- walk: one row per day of a stay, with the generator state x on arrival
-- (the admission draw, or the previous day's move).
-- Each day draws twice: x1 = next(x) for the action (escalate iff
-- x1 mod 1000 < the clinician's escalation per mille at this severity),
-- x2 = next(x1) for the move (the next_state whose [lo, hi) holds
-- x2 mod 1000); the next day starts from x2.
INSERT INTO steps
WITH RECURSIVE
  cfg AS (SELECT * FROM temp.clinical_config),
  -- one stream per patient: its seed x is the next output of a master
  -- generator (multiplier 69621); its own draws use 48271
  seeded(episode, x) AS (
    SELECT 1, 1 + (7919 * (SELECT seed FROM cfg) + 12345) % 2147483646
    UNION ALL
    SELECT episode + 1, x * 69621 % 2147483647 FROM seeded
    WHERE episode < (SELECT patients FROM cfg)),
  walk(episode, t, state, x, expert) AS (
    -- the admission severity from the first draw; the first day starts there
    SELECT p.episode, 0, sc.state, p.x * 48271 % 2147483647,
           (p.episode - 1) % (SELECT clinicians FROM cfg)
    FROM seeded p JOIN starts_cdf sc
      ON p.x * 48271 % 2147483647 % 1000 >= sc.lo AND p.x * 48271 % 2147483647 % 1000 < sc.hi
    UNION ALL
    SELECT w.episode, w.t + 1, d.next_state,
           w.x * 48271 % 2147483647 * 48271 % 2147483647, w.expert
    FROM walk w
    JOIN clinicians c ON c.expert = w.expert
    JOIN dynamics_cdf d
      ON d.state = w.state
     AND d.action = (w.x * 48271 % 2147483647 % 1000 <
                     CASE WHEN w.state >= c.threshold THEN c.p_high ELSE c.p_low END)
     AND w.x * 48271 % 2147483647 * 48271 % 2147483647 % 1000 >= d.lo
     AND w.x * 48271 % 2147483647 * 48271 % 2147483647 % 1000 < d.hi
    WHERE d.next_state < 10 AND w.t + 1 < (SELECT max_steps FROM cfg)
  )
SELECT w.episode, w.t, w.state, d.action, coalesce(o.reward, 0.0), w.expert,
       CASE WHEN d.action = 1 THEN esc / 1000.0 ELSE (1000 - esc) / 1000.0 END
FROM (SELECT w.*, CASE WHEN w.state >= c.threshold THEN c.p_high ELSE c.p_low END AS esc
      FROM walk w JOIN clinicians c ON c.expert = w.expert) w
JOIN dynamics_cdf d
  ON d.state = w.state
 AND d.action = (w.x * 48271 % 2147483647 % 1000 < w.esc)
 AND w.x * 48271 % 2147483647 * 48271 % 2147483647 % 1000 >= d.lo
 AND w.x * 48271 % 2147483647 * 48271 % 2147483647 % 1000 < d.hi
LEFT JOIN outcomes o ON o.code = d.next_state;
