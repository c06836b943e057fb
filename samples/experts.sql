-- samples/experts.sql: 3,000 simulated clinicians (the experts of
-- dp_prefix_stable, the paper's m = 3000) and one patient each, generated
-- reproducibly in plain SQL (a MINSTD generator, as in clinic.sql).
--
--   policies(expert, state, action, prob): every clinician's pi_i(a | s) on
--     the severity scale 0..9 of clinic.sql: escalate (a = 1) with
--     probability 0.84..0.96 when severity >= 5, 0.03..0.07 otherwise;
--   steps(episode, t, state, action): 3,000 patients, up to 20 steps each,
--     patient i treated by clinician i - 1 following that policy.
--
-- Used by the dp_prefix_stable examples of docs/prefix-stable.md and REFERENCE.md.
-- The number of clinicians is read from temp.experts_config (created here
-- with 3,000 unless the caller made it first: samples/prefix_stable.sql
-- uses 300); patient i is then treated by clinician (i - 1) mod that.
CREATE TEMP TABLE IF NOT EXISTS experts_config AS SELECT 3000 AS clinicians;
DROP TABLE IF EXISTS policies;
DROP TABLE IF EXISTS steps;
CREATE TABLE policies(expert INTEGER, state INTEGER, action INTEGER, prob REAL,
                      PRIMARY KEY (expert, state, action));
INSERT INTO policies
WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c
                        WHERE i < (SELECT clinicians FROM temp.experts_config) - 1),
     s(state) AS (SELECT 0 UNION ALL SELECT state + 1 FROM s WHERE state < 9),
     esc AS (SELECT i, state,
               CASE WHEN state >= 5 THEN 0.90 + 0.02 * ((i % 7) - 3)
                    ELSE 0.05 + 0.01 * ((i % 5) - 2) END AS p
             FROM c, s)
SELECT i, state, 1, p FROM esc UNION ALL SELECT i, state, 0, 1.0 - p FROM esc;

CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER, action INTEGER,
                   PRIMARY KEY (episode, t));
INSERT INTO steps
WITH RECURSIVE
  patients(episode, seed) AS (
    SELECT 1, 7919 UNION ALL
    SELECT episode + 1, 1 + ((episode + 1) * 7919) % 2147483646 FROM patients WHERE episode < 3000),
  walk(episode, t, state, x, expert) AS (
    SELECT episode, 0, 3 + (seed * 48271 % 2147483647) % 6,
           seed * 48271 % 2147483647 * 48271 % 2147483647,
           (episode - 1) % (SELECT clinicians FROM temp.experts_config)
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
