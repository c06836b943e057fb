-- samples/clinic.sql: a small synthetic ICU log, generated reproducibly in
-- plain SQL (no randomness from the engine: a MINSTD generator carried
-- through a recursive CTE, seeded per patient).
--
-- 20,000 patients (episodes), one row per 4-hour step, up to 20 steps.
-- state:  severity 0..9 (0 = ready for discharge, 9 = critical)
-- action: 0 = standard care, 1 = escalate (vasopressors)
-- reward: 1 for every step spent stable (severity <= 2), 0 otherwise
-- expert: the attending clinician (0..29) who treated the patient
-- An episode ends at discharge (severity 0), at severity 9, or after 20 steps.
-- Escalating tends to lower severity; clinicians differ in how often they
-- escalate.
DROP TABLE IF EXISTS steps;
CREATE TABLE steps(
  episode INTEGER NOT NULL,
  t       INTEGER NOT NULL,
  state   INTEGER NOT NULL,
  action  INTEGER NOT NULL,
  reward  REAL    NOT NULL,
  expert  INTEGER NOT NULL,
  PRIMARY KEY (episode, t)
);
INSERT INTO steps
WITH RECURSIVE
  patients(episode, seed) AS (
    SELECT 1, 1 + (1 * 7919) % 2147483646
    UNION ALL
    SELECT episode + 1, 1 + ((episode + 1) * 7919) % 2147483646
    FROM patients WHERE episode < 20000
  ),
  walk(episode, t, state, x, expert) AS (
    -- x: the generator state; admission severity 3..8
    SELECT episode, 0, 3 + (seed * 48271 % 2147483647) % 6,
           seed * 48271 % 2147483647 * 48271 % 2147483647,
           (seed * 16807 % 2147483647) % 30
    FROM patients
    UNION ALL
    SELECT episode, t + 1,
      -- next severity: escalation (chosen with probability 20% + 2% * expert
      -- when severity >= 5) moves down by 1 or 2; otherwise a drift in
      -- {-1, 0, +1} with probabilities 40/35/25.
      max(0, min(9, state +
        CASE WHEN state >= 5 AND (x % 100) < 20 + 2 * expert
             THEN -1 - ((x / 100) % 2)
             ELSE CASE WHEN (x / 100) % 100 < 40 THEN -1
                       WHEN (x / 100) % 100 < 75 THEN 0 ELSE 1 END
        END)),
      x * 48271 % 2147483647,
      expert
    FROM walk
    WHERE t < 19 AND state BETWEEN 1 AND 8
  )
SELECT episode, t, state,
       -- the action taken at this step, with the same draw as above
       CASE WHEN state >= 5 AND (x % 100) < 20 + 2 * expert THEN 1 ELSE 0 END,
       CASE WHEN state <= 2 THEN 1.0 ELSE 0.0 END,
       expert
FROM walk;
