-- samples/clinical/model.sql: the true MDP behind the clinical sample, as
-- tables, so that the exact value of any treatment policy can be computed
-- (exact.py) and compared with what a private release estimates from the
-- log (log.sql).
--
-- One step is one day in intensive care, for at most 30 days.
--   state      severity 0..9 (0 = ready to go home, 9 = critical)
--   action     0 = standard care, 1 = escalate (vasopressors, ventilation)
--   next_state 0..9, or an outcome that ends the stay:
--                10 = discharged home (reward +1), 11 = died (reward -1)
--   reward     of a step: +1 if it ends in discharge, -1 if it ends in
--              death, 0 otherwise (so a policy's value is P(home) - P(died)
--              within 30 days, in [-1, 1]); a stay still open after 30
--              days ends with reward 0
--
-- The clinical story: under standard care mild patients recover and
-- severe ones deteriorate, the turning point being around severity 4-5;
-- escalation reverses the course of a severe patient but has its own risks
-- (complications, a slower discharge), so it does harm at low severity.
-- The optimal rule escalates at severity >= 4; the clinicians of log.sql
-- mostly wait until 6.
--
-- Tables:
--   course(state, action, discharge, death, down2, down1, up1)
--       the parameters, in per mille: the probability of each move from
--       (state, action); the rest of the 1000 is "stay at the same severity"
--   outcomes(code, name, reward)
--   dynamics(state, action, next_state, prob, permille)
--   dynamics_cdf(state, action, next_state, lo, hi)  [lo, hi) per mille, for sampling
--   rewards(state, action, reward)   the expected reward of a step
--   starts(state, prob, permille), starts_cdf(state, lo, hi)  severity at admission
DROP TABLE IF EXISTS course;
DROP TABLE IF EXISTS outcomes;
DROP TABLE IF EXISTS dynamics;
DROP TABLE IF EXISTS dynamics_cdf;
DROP TABLE IF EXISTS dynamics_check;
DROP TABLE IF EXISTS rewards;
DROP TABLE IF EXISTS starts;
DROP TABLE IF EXISTS starts_cdf;

CREATE TABLE course(
  state INTEGER NOT NULL CHECK (state BETWEEN 0 AND 9),
  action INTEGER NOT NULL CHECK (action IN (0, 1)),
  discharge INTEGER NOT NULL, death INTEGER NOT NULL,
  down2 INTEGER NOT NULL, down1 INTEGER NOT NULL, up1 INTEGER NOT NULL,
  CHECK (min(discharge, death, down2, down1, up1) >= 0 AND
         discharge + death + down2 + down1 + up1 <= 1000),
  PRIMARY KEY (state, action));
INSERT INTO course VALUES
  -- standard care: recovery below 4, deterioration above
  (0, 0, 850,   0, 0,   0,  80),
  (1, 0, 550,   0, 0, 300,  80),
  (2, 0, 250,   0, 0, 550, 120),
  (3, 0,   0,   0, 0, 600, 250),
  (4, 0,   0,  10, 0, 450, 400),
  (5, 0,   0,  40, 0, 280, 520),
  (6, 0,   0, 100, 0, 200, 580),
  (7, 0,   0, 180, 0, 120, 600),
  (8, 0,   0, 320, 0, 100, 500),
  (9, 0,   0, 600, 0, 100,   0),
  -- escalation: complications and a later discharge when mild, a reversed
  -- course (down by one or two) when severe
  (0, 1, 450,  10,   0,   0, 300),
  (1, 1, 300,  10,   0, 350, 250),
  (2, 1, 150,  15,   0, 550, 200),
  (3, 1,   0,  25,  50, 500, 280),
  (4, 1,   0,  30, 100, 500, 250),
  (5, 1,   0,  40, 150, 450, 250),
  (6, 1,   0,  60, 150, 450, 250),
  (7, 1,   0, 110, 120, 420, 280),
  (8, 1,   0, 200, 100, 380, 300),
  (9, 1,   0, 350,  80, 350,   0);

CREATE TABLE outcomes(code INTEGER PRIMARY KEY, name TEXT NOT NULL, reward REAL NOT NULL);
INSERT INTO outcomes VALUES (10, 'discharged', 1.0), (11, 'died', -1.0);

CREATE TABLE dynamics(state INTEGER NOT NULL, action INTEGER NOT NULL,
                      next_state INTEGER NOT NULL, prob REAL NOT NULL,
                      permille INTEGER NOT NULL,
                      PRIMARY KEY (state, action, next_state));
INSERT INTO dynamics
SELECT state, action, next_state, sum(pm) / 1000.0, sum(pm) FROM (
  SELECT state, action, 10 AS next_state, discharge AS pm FROM course
  UNION ALL SELECT state, action, 11, death FROM course
  UNION ALL SELECT state, action, max(state - 2, 0), down2 FROM course
  UNION ALL SELECT state, action, max(state - 1, 0), down1 FROM course
  UNION ALL SELECT state, action, min(state + 1, 9), up1 FROM course
  UNION ALL SELECT state, action, state, 1000 - discharge - death - down2 - down1 - up1
  FROM course)
WHERE pm > 0
GROUP BY state, action, next_state;

-- every (state, action) is a distribution, and all 20 pairs are there (the
-- CHECK fails the script otherwise)
CREATE TEMP TABLE dynamics_check(state, action, total CHECK (total = 1000));
INSERT INTO dynamics_check SELECT state, action, sum(permille) FROM dynamics GROUP BY 1, 2;
INSERT INTO dynamics_check SELECT 99, 99, count(*) * 50 FROM (SELECT DISTINCT state, action FROM dynamics);
DROP TABLE temp.dynamics_check;

CREATE TABLE dynamics_cdf(state INTEGER, action INTEGER, next_state INTEGER,
                          lo INTEGER, hi INTEGER, PRIMARY KEY (state, action, lo));
INSERT INTO dynamics_cdf
SELECT state, action, next_state,
       sum(permille) OVER w - permille,
       sum(permille) OVER w
FROM dynamics
WINDOW w AS (PARTITION BY state, action ORDER BY next_state);

CREATE TABLE rewards(state INTEGER, action INTEGER, reward REAL,
                     PRIMARY KEY (state, action));
INSERT INTO rewards
SELECT d.state, d.action, sum(d.prob * coalesce(o.reward, 0))
FROM dynamics d LEFT JOIN outcomes o ON o.code = d.next_state
GROUP BY d.state, d.action;

CREATE TABLE starts(state INTEGER PRIMARY KEY, prob REAL NOT NULL, permille INTEGER NOT NULL);
INSERT INTO starts VALUES (3, 0.15, 150), (4, 0.25, 250), (5, 0.25, 250),
                          (6, 0.15, 150), (7, 0.12, 120), (8, 0.08, 80);
CREATE TABLE starts_cdf(state INTEGER PRIMARY KEY, lo INTEGER, hi INTEGER);
INSERT INTO starts_cdf
SELECT state, sum(permille) OVER w - permille, sum(permille) OVER w
FROM starts WINDOW w AS (ORDER BY state);
