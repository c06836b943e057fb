-- tests/sql/cli.sql: the SQL functions through the sqlite3 shell (the
-- suite runs it under AddressSanitizer with leak detection on).  Every
-- statement's output is compared with tests/sql/cli.expected.
.load ./dprl
CREATE TABLE steps(episode, t, state, reward);
INSERT INTO steps VALUES (1,0,0,1),(1,1,1,0),(1,2,2,1),(2,0,1,1),(2,1,2,1),(3,0,2,0);
SELECT dprl_version();
-- exact quantities of the hand example (ALGORITHMS.md §1-2)
SELECT json_extract(r, '$.visits'), json_extract(r, '$.returns'), json_extract(r, '$.episodes')
FROM (SELECT dp_lsw(episode, t, state, reward,
  '{"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 0.1, "release": "diagnostic", "seed": 1}') AS r
  FROM steps);
-- a private release has exactly these keys
SELECT group_concat(key, ',') FROM json_each((SELECT dp_lsl(episode, t, state, reward,
  '{"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 0.1, "lambda": 3}') FROM steps));
SELECT count(*) FROM dp_first_visit('SELECT episode, t, state, reward FROM steps',
  '{"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1}');
-- errors: each prints a message and leaks nothing
SELECT dp_lsw(episode, t, state, reward, '{"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 0, "delta": 0.1}') FROM steps;
SELECT dp_lsw(episode, t, state, reward, '{"n_states": 2, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 0.1}') FROM steps;
SELECT dp_lsw(episode, t, state, reward, '{"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 0.1, "grouped": true}')
FROM (SELECT * FROM steps ORDER BY state);
SELECT dp_lsw(episode, t, state, reward, '{') FROM steps;
SELECT * FROM dp_first_visit('SELECT episode, t FROM steps', '{"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1}');
SELECT dp_lsw_from_stats(state, visits, s, '{"n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 0.1, "episodes": 1}')
FROM (SELECT 0 AS state, 2 AS visits, 1.0 AS s);
DROP TABLE steps;
SELECT 'done';
