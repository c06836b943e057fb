-- samples/q_learning/run.sql: private Q-learning with functional noise on
-- the paper's task (Wang & Hegde 2019), end to end in SQL.
--
--   make && sqlite3 :memory: < samples/q_learning/run.sql     (from the repo root)
--
-- Learns a Q-function from 5,000 logged transitions with dp_q_learn
-- (epsilon = 1, delta = 1e-5), releases it, queries it on a grid of states,
-- compares it with the same learner without noise, plays the greedy
-- policies, and draws the noise path itself with dp_q_noise.  Writes
-- samples/q_learning/out/*.dat and, if gnuplot is installed, *.png.
-- The private release is unseeded (that is what makes it private), so its
-- numbers change from run to run; the data do not.
.bail on
.load ./dprl
.read samples/q_learning/task.sql
.mode box

SELECT count(*) AS transitions, count(DISTINCT episode) AS episodes,
       round(avg(a), 3) AS share_right, round(avg(r), 3) AS mean_reward
FROM transitions;

-- Public parameters, as in the paper (E.1, E.3): T = 5000 transitions in
-- batches of B = 64 (78 SGD steps), learning rate 3e-4, 21 tent features
-- per action on [0, 1], rewards in [0, 1], gamma = 0.9.  The paper's own
-- k = 23 has no guarantee (Theorem 5 needs 2k > 8.68 sqrt(beta) sigma);
-- k = 60 has one.  J defaults to T/B: a fresh noise path every batch.
CREATE TEMP TABLE opts(name TEXT PRIMARY KEY, o TEXT);
INSERT INTO opts VALUES
 ('private', '{"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 5000, "B": 64, "K": 21,
               "k": 60, "epsilon": 1, "delta": 1e-5}'),
 ('non-private', '{"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 5000, "B": 64, "K": 21,
                   "sigma": 0}'),
 ('non-private, converged', '{"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 1, "lr": 0.3, "T": 1280000, "B": 64,
                              "K": 21, "sigma": 0}');

-- What the calibration gives (dp_q_learn computes L from the features).
SELECT round(json_extract(c, '$.sigma'), 4) AS sigma, round(json_extract(c, '$.beta'), 1) AS beta,
       json_extract(c, '$.delta_total') AS delta_total, round(json_extract(c, '$.L'), 4) AS L,
       json_extract(c, '$.accountant') AS accountant
FROM (SELECT dp_q_calibrate('{"epsilon": 1, "delta": 1e-5, "T": 5000, "B": 64, "lr": 3e-4, "rmin": 0, "rmax": 1,
                              "k": 60, "K": 21}') AS c);

-- The releases.  Only the first is private; the others are for comparison.
CREATE TEMP TABLE models(kind TEXT PRIMARY KEY, model TEXT);
INSERT INTO models
SELECT name, (SELECT dp_q_learn(s, a, r, s_next, o) FROM transitions) FROM opts;

SELECT kind, json_extract(model, '$.private') AS private,
       json_extract(model, '$.theta_noise.sigma') AS sigma_theta,
       json_extract(model, '$.paths.sigma') AS path_sigma, json_extract(model, '$.epsilon') AS epsilon,
       json_extract(model, '$.delta') AS delta
FROM models;

-- Q on a grid of states (dp_q_value evaluates a released model).  With
-- lr = 3e-4 and 78 steps, Q is still small (x 1000 below): what matters
-- for the policy is which action is larger.
CREATE TEMP TABLE grid AS
WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < 20)
SELECT i / 20.0 AS state,
  dp_q_value((SELECT model FROM models WHERE kind = 'private'), i / 20.0, 0) AS p_left,
  dp_q_value((SELECT model FROM models WHERE kind = 'private'), i / 20.0, 1) AS p_right,
  dp_q_value((SELECT model FROM models WHERE kind = 'non-private'), i / 20.0, 0) AS n_left,
  dp_q_value((SELECT model FROM models WHERE kind = 'non-private'), i / 20.0, 1) AS n_right,
  dp_q_value((SELECT model FROM models WHERE kind = 'non-private, converged'), i / 20.0, 0) AS c_left,
  dp_q_value((SELECT model FROM models WHERE kind = 'non-private, converged'), i / 20.0, 1) AS c_right
FROM g;

SELECT printf('%.2f', state) AS state,
       printf('%.3f', 1000 * p_left) AS "private Q(s,left) x1000",
       printf('%.3f', 1000 * p_right) AS "private Q(s,right) x1000",
       printf('%.3f', 1000 * n_left) AS "non-private Q(s,left) x1000",
       printf('%.3f', 1000 * n_right) AS "non-private Q(s,right) x1000",
       CASE WHEN p_right > p_left THEN 'right' ELSE 'left' END AS "private greedy",
       CASE WHEN c_right > c_left THEN 'right' ELSE 'left' END AS "converged greedy"
FROM grid;

-- The greedy policies played for 200 episodes of 50 steps in SQL, with the
-- same start states and step sizes for every policy (common random
-- numbers; MINSTD as in task.sql); 'random' picks actions by coin.
-- Optimal play earns about 20.7 per episode, random play about 11.
WITH RECURSIVE
players(kind, model) AS (SELECT kind, model FROM models UNION ALL SELECT 'random', NULL),
sim(kind, model, e, t, x, s) AS (
  SELECT kind, model, 0, 0, 987654321, 987654321 / 2147483647.0 FROM players
  UNION ALL
  SELECT kind, model,
         CASE WHEN t < 50 THEN e ELSE e + 1 END,
         CASE WHEN t < 50 THEN t + 1 ELSE 0 END,
         x * 1291394886 % 2147483647,
         CASE WHEN t < 50 THEN
           CASE WHEN (CASE WHEN model IS NULL THEN (x * 48271 % 2147483647) * 2 / 2147483647
                           ELSE dp_q_value(model, s, 1) > dp_q_value(model, s, 0) END) = 1
             THEN min(1.0, s + 0.25 * (x * 182605794 % 2147483647) / 2147483647.0)
             ELSE max(0.0, s - 0.25 * (x * 182605794 % 2147483647) / 2147483647.0) END
         ELSE (x * 1291394886 % 2147483647) / 2147483647.0 END
  FROM sim WHERE e < 199 OR t < 50
)
SELECT kind AS policy, printf('%.2f', sum(0.5 - abs(s - 0.5)) / 200) AS "mean return (50 steps)"
FROM sim WHERE t > 0 GROUP BY kind ORDER BY 2 DESC;

-- The noise itself: one sample path per action of GP(0, sigma^2 exp(-beta
-- |x - y|)) at the calibrated sigma and beta, drawn by dp_q_noise at q = 0
-- and kept in the path table "noise_path" (the one table dprl writes).
-- A second, finer query conditions on the stored points: the old points
-- keep their values, new ones are drawn from the exact bridge between
-- them.  New noise is stored from plain SELECTs only (dprl writes it
-- inside a SAVEPOINT, which SQLite refuses inside a statement that itself
-- writes); once stored, CREATE TABLE ... AS SELECT reads it back.
CREATE TEMP VIEW noise_opts(o) AS SELECT
  '{"n_actions": 2, "epsilon": 1, "delta": 1e-5, "T": 5000, "B": 64, "lr": 3e-4, "rmin": 0, "rmax": 1, "k": 60,
    "K": 21, "path": "noise_path"}';
SELECT count(*) AS coarse_points FROM dp_q_noise(
  'WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < 20)
   SELECT i / 20.0, a, 0 FROM g, (SELECT 0 AS a UNION ALL SELECT 1)', (SELECT o FROM noise_opts));
SELECT count(*) AS fine_points FROM dp_q_noise(
  'WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < 400)
   SELECT i / 400.0, a, 0 FROM g, (SELECT 0 AS a UNION ALL SELECT 1)', (SELECT o FROM noise_opts));
CREATE TEMP TABLE fine AS SELECT * FROM dp_q_noise(
  'WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < 400)
   SELECT i / 400.0, a, 0 FROM g, (SELECT 0 AS a UNION ALL SELECT 1)', (SELECT o FROM noise_opts));
SELECT (SELECT count(*) FROM noise_path) AS stored_points,
       (SELECT count(*) FROM fine f JOIN noise_path p
          ON p.action = f.action AND p.state = f.state AND p.g = f.noisy_q) AS rows_equal_to_stored,
       (SELECT printf('%.3f', sqrt(avg(noisy_q * noisy_q))) FROM fine) AS rms_noise,
       (SELECT printf('%.4f', sigma) FROM noise_path_params) AS sigma;

-- Files for the plots.
.shell mkdir -p samples/q_learning/out
.mode tabs
.headers off
.once samples/q_learning/out/q_values.dat
SELECT state, 1000 * p_left, 1000 * p_right, 1000 * n_left, 1000 * n_right, c_left, c_right FROM grid;
.once samples/q_learning/out/noise.dat
SELECT state, max(CASE WHEN action = 0 THEN noisy_q END), max(CASE WHEN action = 1 THEN noisy_q END)
FROM fine GROUP BY state ORDER BY state;
.shell if command -v gnuplot >/dev/null; then gnuplot samples/q_learning/plot.gp && echo "wrote samples/q_learning/out/q_values.png, samples/q_learning/out/noise.png"; else echo "gnuplot not found: data in samples/q_learning/out/*.dat"; fi
