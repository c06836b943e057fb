-- samples/long_episodes.sql: 12 long stays (3,000 steps each) added to the
-- ICU log of samples/clinic.sql (.read it after that file), so that the
-- blocks of sql/<engine>/first_visit_stats.sql matter: at gamma = 0.9 an
-- episode is cut into blocks of 874 steps, and a return that starts in one
-- block is completed by the return carried from the next.  The ICU stays
-- (at most 20 steps) never leave their first block.
--
-- Patients 20001..20012 (above the ICU ids).  Patient 20000 + i first
-- visits three new states just before block boundaries, at positions
-- 874k - 1 - (i % 3) for k = 1, 2, 3: their first-visit returns are mostly
-- carried from the next block.  Before the k-th of them the stay cycles
-- through the states (i + 0) .. (i + k + 1) mod 10 it has visited (2 at
-- the start); the k-th visits state (i + k + 1) mod 10 for the first time.
-- Deterministic rewards in [0, 0.99]; action 0; expert i.
-- Without the carry between blocks, the return sum of every one of the 10
-- states (gamma 0.9, fmax 9, with the ICU stays) would be 11 to 21 lower,
-- a relative 1.8e-4 to 0.46: the demos' checks allow 1e-12.
INSERT INTO steps(episode, t, state, action, reward, expert)
WITH RECURSIVE
  pos(p) AS (SELECT 0 UNION ALL SELECT p + 1 FROM pos WHERE p < 2999),
  patient(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM patient WHERE i < 12),
  walk(i, p, k, first) AS (
    -- k: how many of the three positions are at or before p; first: p is one
    SELECT i, p, (p + 1 + i % 3) / 874, (p + 1 + i % 3) % 874 = 0
    FROM patient CROSS JOIN pos
  )
SELECT 20000 + i, p,
       CASE WHEN first THEN (i + 1 + k) % 10 ELSE (i + p % (2 + k)) % 10 END,
       0,
       ((p * 37 + i * 11) % 100) / 100.0,
       i
FROM walk;
