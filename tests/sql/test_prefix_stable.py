"""dp_prefix_stable through SQL: the released prefixes, T, tiny epsilon,
exact prefixes of the input, and every policy / input error."""
import json
import math

from harness import check, check_error, connect, run, sql_error

Q = ("SELECT episode, t, state, action, next_state FROM dp_prefix_stable("
     "'SELECT episode, t, state, action FROM steps', "
     "'SELECT expert, state, action, prob FROM policies', ?) ORDER BY episode, t")


def setup(m, n_traj, length, j0, p_min=1e-3):
    """m experts, states {0, 1}, actions {0, 1, 2}: every expert plays
    action 0 with prob 1 - 2 p_min and actions 1, 2 with p_min.  Each
    trajectory plays action 0 until step j0 (1-based), where it plays
    action 1, which every expert gives only p_min."""
    con = connect()
    con.execute("CREATE TABLE policies(expert, state, action, prob)")
    con.executemany("INSERT INTO policies VALUES (?,?,?,?)",
                    [(f"dr{e}", s, a, 1 - 2 * p_min if a == 0 else p_min)
                     for e in range(m) for s in (0, 1) for a in (0, 1, 2)])
    con.execute("CREATE TABLE steps(episode, t, state, action)")
    rows = []
    for ep in range(n_traj):
        for j in range(1, length + 1):
            rows.append((ep, 10 * j, (ep + j) % 2, 1 if j == j0 else 0))
    con.executemany("INSERT INTO steps VALUES (?,?,?,?)", rows)
    return con, rows


def margins(m, T, L, eps, delta, p_min, counts_above, count_below):
    """In units of the query's Laplace scale 4/eps' (ALGORITHMS.md §7)."""
    ep = eps / math.sqrt(32 * T * math.log(2 / delta))
    c_min = math.exp(ep) / (math.exp(ep) - 1)
    base = c_min / p_min + (4 / ep) * math.log(2 * T * L / delta)
    b = 4 / ep
    return (counts_above - base) / b, (base - count_below) / b


def test_cliff():
    # m = 20000, j0 = 6: counts before the cliff are >= 20000 * 0.998^5 =
    # 19800; at the cliff <= 19800 * 1e-3 = 19.8.  Both margins are hundreds
    # of Laplace scales, so a failure has probability < e^-100.
    m, n, L, j0 = 20000, 12, 9, 6
    con, rows = setup(m, n, L, j0)
    o = {"epsilon": 20, "delta": 0.1, "p_min": 1e-3, "seed": 5}
    above, below = margins(m, n, L, 20, 0.1, 1e-3, m * 0.998 ** (j0 - 1),
                           m * 0.998 ** (j0 - 1) * 1e-3)
    check(above > 100 and below > 100, "cliff: margins are > 100 Laplace scales",
          f"{above} {below}")
    out = con.execute(Q, (json.dumps(o),)).fetchall()
    per = {}
    for r in out:
        per.setdefault(r[0], []).append(r)
    check(sorted(per) == list(range(n)) and all(len(v) == j0 - 1 for v in per.values()),
          "cliff: every trajectory released with prefix length j0 - 1",
          {k: len(v) for k, v in per.items()})
    # exact prefixes, with next_state = the state of the following step
    by = {(e, t): (s, a) for e, t, s, a in rows}
    exact = all(by[(e, t)] == (s, a) and nxt == by[(e, t + 10)][0] for e, t, s, a, nxt in out)
    check(exact, "released rows are exact prefixes of the input, next_state included")
    # unseeded: the same outcome (the margins do not depend on the draw)
    o2 = dict(o)
    del o2["seed"]
    out2 = con.execute(Q, (json.dumps(o2),)).fetchall()
    check(out2 == out, "cliff: secure noise gives the same prefixes")


def test_whole_trajectories_and_T():
    m, n, L = 20000, 10, 5
    con, rows = setup(m, n, L, j0=99)  # no cliff: every step is stable
    o = {"epsilon": 20, "delta": 0.1, "p_min": 1e-3, "T": 4, "seed": 1}
    out = con.execute(Q, (json.dumps(o),)).fetchall()
    eps = {r[0] for r in out}
    check(len(eps) == 4 and len(out) == 4 * L, "T = 4: exactly 4 trajectories examined and "
          "released whole", (len(eps), len(out)))
    last = [r for r in out if r[1] == 10 * L]
    check(len(last) == 4 and all(r[4] is None for r in last),
          "the last step of a whole trajectory has next_state NULL")
    out_l = con.execute(Q, (json.dumps(dict(o, L=3)),)).fetchall()
    check(len(out_l) == 4 * 3 and all(r[4] is not None for r in out_l),
          "L = 3: prefixes stop at 3 steps and keep their next state")


def test_tiny_epsilon():
    con, _ = setup(20000, 8, 6, j0=99)
    out = con.execute(Q, (json.dumps({"epsilon": 1e-3, "delta": 0.1, "p_min": 1e-3}),)).fetchall()
    check(out == [], "epsilon = 1e-3: nothing is released (threshold far above m)")


def test_errors():
    con, _ = setup(3, 2, 3, j0=2, p_min=0.1)
    o = {"epsilon": 1, "delta": 0.1, "p_min": 0.1}

    def err(msg, name, opts=o, sql=Q):
        check_error(con, sql, msg, name, (json.dumps(opts),))
    err("dp_prefix_stable: p_min must be in (0, 1/|A|) = (0, 0.333333), got 0.5",
        "p_min >= 1/|A| refused", dict(o, p_min=0.5))
    err("dp_prefix_stable: option epsilon is required", "epsilon required",
        {"delta": 0.1, "p_min": 0.1})
    err("dp_prefix_stable: option T must be at most the number of trajectories (2), got 3",
        "T above the number of trajectories", dict(o, T=3))
    err('dp_prefix_stable: unknown option "Tmax" (known: epsilon, delta, p_min, T, L, seed)',
        "unknown option", dict(o, Tmax=3))
    con.execute("UPDATE policies SET prob = 0.05 WHERE expert = 'dr1' AND state = 0 AND action = 2")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg is not None and msg.startswith("dp_prefix_stable: policies: expert 1, state 0, "
                                             "action 2: prob 0.05 < p_min 0.1"),
          "a prob below p_min is an error", msg)
    con.execute("UPDATE policies SET prob = 0.15 WHERE expert = 'dr1' AND state = 0 AND action = 2")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg is not None and "probabilities sum to" in msg and "expert 1, state 0" in msg,
          "probabilities not summing to 1 is an error", msg)
    con.execute("UPDATE policies SET prob = 0.1 WHERE expert = 'dr1' AND state = 0 AND action = 2")
    con.execute("DELETE FROM policies WHERE expert = 'dr2' AND state = 1 AND action = 0")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg == "dp_prefix_stable: policies: missing (expert 2, state 1, action 0)",
          "a missing (expert, state, action) is an error", msg)
    con.execute("INSERT INTO policies VALUES ('dr2', 1, 0, NULL)")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg == "dp_prefix_stable: policies_sql: prob must be a number, got NULL",
          "a NULL prob is an error", msg)
    con.execute("UPDATE policies SET prob = 0.8 WHERE prob IS NULL")
    con.execute("INSERT INTO policies VALUES ('dr2', 1, 0, 0.8)")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg == "dp_prefix_stable: policies: duplicate (expert 2, state 1, action 0)",
          "a duplicate policy row is an error", msg)
    con.execute("DELETE FROM policies WHERE rowid = (SELECT max(rowid) FROM policies)")
    check(sql_error(con, Q, (json.dumps(o),)) is None, "the repaired policy table is accepted")
    con.execute("INSERT INTO steps VALUES (7, 0, 5, 0)")
    err("dp_prefix_stable: trajectories_sql: state 5 is not in the policy table (policies_sql)",
        "a trajectory state not in the policies is an error")
    con.execute("UPDATE steps SET state = 0, action = 9 WHERE episode = 7")
    err("dp_prefix_stable: trajectories_sql: action 9 is not in the policy table (policies_sql)",
        "a trajectory action not in the policies is an error")
    con.execute("DELETE FROM steps WHERE episode = 7")
    err("dp_prefix_stable: policies_sql must return 4 columns, got 3", "policies_sql columns",
        sql=Q.replace("expert, state, action, prob", "expert, state, action"))
    err("dp_prefix_stable: trajectories_sql must not write (a read-only SELECT)",
        "trajectories_sql that writes",
        sql=Q.replace("'SELECT episode, t, state, action FROM steps'", "'DELETE FROM steps'"))
    check(con.execute("SELECT count(*) FROM steps").fetchone()[0] == 6, "user tables untouched")
    check_error(con, "SELECT * FROM dp_prefix_stable('SELECT * FROM steps', "
                "'SELECT * FROM policies')", "dp_prefix_stable: argument options is required",
                "missing options argument")
    con.execute("DROP TABLE steps")
    check(sql_error(con, "SELECT 1") is None, "statements finalized: DROP TABLE works after errors")


run([test_cliff, test_whole_trajectories_and_T, test_tiny_epsilon, test_errors])
