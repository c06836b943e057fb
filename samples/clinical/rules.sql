-- samples/clinical/rules.sql: the treatment rules to evaluate on the
-- clinical sample (after model.sql and log.sql), as one table
--   policies(rule, state, action, prob)        pi(action | state) per rule
-- (the rule's policy(state, action, prob) is its rows WHERE rule = '...').
--
--   new_rule         escalate at severity >= 4 (the rule a team proposes)
--   majority         the clinicians' majority rule: escalate at a
--                    severity where more than half of the clinicians escalate
--                    more often than not
--   standard_care    never escalate
--   always_escalate  always escalate
--   logged_mixture   per severity, the patients' average of their clinicians'
--                    probabilities: one Markov policy; the log itself is a
--                    mixture of clinicians (each patient keeps one), whose
--                    value exact.py computes separately ("logged")
-- The exact value of each is exact.py's; dp_is_value needs the target's
-- probability of each logged action: JOIN policies ON (state, action).
DROP TABLE IF EXISTS policies;
CREATE TABLE policies(rule TEXT, state INTEGER, action INTEGER, prob REAL,
                      PRIMARY KEY (rule, state, action));
INSERT INTO policies
WITH RECURSIVE s(state) AS (SELECT 0 UNION ALL SELECT state + 1 FROM s WHERE state < 9),
  esc(rule, state, p) AS (
    SELECT 'new_rule', state, CASE WHEN state >= 4 THEN 1.0 ELSE 0.0 END FROM s
    UNION ALL
    SELECT 'majority', state,
           CASE WHEN 2 * (SELECT count(*) FROM clinician_policy
                          WHERE state = s.state AND action = 1 AND prob > 0.5)
                     > (SELECT count(*) FROM clinicians) THEN 1.0 ELSE 0.0 END
    FROM s
    UNION ALL SELECT 'standard_care', state, 0.0 FROM s
    UNION ALL SELECT 'always_escalate', state, 1.0 FROM s
    UNION ALL
    SELECT 'logged_mixture', cp.state, sum(cp.prob * n.patients) / sum(n.patients)
    FROM clinician_policy cp
    JOIN (SELECT expert, count(DISTINCT episode) AS patients FROM steps GROUP BY expert) n
      ON n.expert = cp.expert
    WHERE cp.action = 1
    GROUP BY cp.state)
SELECT rule, state, 1, p FROM esc
UNION ALL SELECT rule, state, 0, 1.0 - p FROM esc;
