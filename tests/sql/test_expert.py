"""dp_expert_policy (ALGORITHMS.md section 16): a consensus policy released
at expert level.  The exact votes of a diagnostic release against an
independent computation (with and without max_states), the keys, seeded
reproducibility, every error class, the ledger (unit "expert", one charge
for a GROUP BY over a partition of the experts, an expert in two groups
refused), a release over no experts, and a neighbouring-expert attack:
over seeded draws, the best linear test between two logs that differ by
one expert separates them by no more than the claimed mu = Delta / sigma."""
import json
import math
import os
import random
import tempfile

from harness import check, connect, interrupted, run, sql_error

CALL = "SELECT dp_expert_policy(expert, episode, t, state, action, ?) FROM log"
BASE = {"n_states": 4, "n_actions": 3, "epsilon": 1, "delta": 1e-6, "default_action": 0}


def options(**kw):
    return json.dumps(dict(BASE, **kw))


def make_log(seed=1, experts=12, S=4, A=3):
    """Text expert keys, integer episodes per expert, uneven visits."""
    rng = random.Random(seed)
    rows = []
    for x in range(experts):
        key = f"dr{x}"
        for ep in range(rng.randint(1, 4)):
            for t in range(rng.randint(1, 7)):
                s = min(S - 1, int(rng.random() ** 2 * S))  # low states are visited more
                a = rng.randrange(A) if rng.random() < 0.4 else (x + s) % A
                rows.append((key, ep, t, s, a))
    return rows


def table(rows, extra=""):
    con = connect()
    con.execute(f"CREATE TABLE log(expert, episode, t, state, action{extra})")
    n = len(rows[0]) if rows else 5
    con.executemany(f"INSERT INTO log VALUES ({', '.join('?' * n)})", rows)
    return con


def release(con, sql=CALL, **kw):
    return json.loads(con.execute(sql, (options(**kw),)).fetchone()[0])


def exact(rows, S, A, k=None):
    """Independent: per expert pi(a|s) over its k most visited states (ties:
    the lower state), summed over experts; and the experts per state."""
    per = {}
    for x, _ep, _t, s, a in rows:
        per.setdefault(x, {}).setdefault(s, [0] * A)[a] += 1
    votes = [[0.0] * A for _ in range(S)]
    counts = [0] * S
    for states in per.values():
        chosen = sorted(states, key=lambda s: (-sum(states[s]), s))
        if k is not None:
            chosen = chosen[:k]
        for s in chosen:
            n = sum(states[s])
            counts[s] += 1
            for a in range(A):
                votes[s][a] += states[s][a] / n
    return votes, counts


def test_exact_votes():
    rows = make_log()
    con = table(rows)
    for k in (None, 1, 2):
        kw = {"release": "diagnostic", "seed": 5}
        if k:
            kw["max_states"] = k
        r = release(con, **kw)
        v, c = exact(rows, 4, 3, k)
        label = f"max_states {k}" if k else "no max_states"
        check(all(math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)
                  for rv, vv in zip(r["exact_votes"], v) for x, y in zip(rv, vv)),
              f"{label}: the exact votes equal an independent computation",
              f"{r['exact_votes']}\n{v}")
        check(r["exact_counts"] == c and r["experts"] == 12,
              f"{label}: the experts per state and in all", f"{r['exact_counts']} {c}")
        check(r["private"] is False and r["max_states"] == (k or 4),
              f"{label}: diagnostic is not private; max_states is k")
        # the noisy release is within 6 sigma of the exact one
        far = max(abs(x - y) for rv, vv in zip(r["votes"], v) for x, y in zip(rv, vv))
        check(far < 6 * r["sigma"], f"{label}: noisy votes within 6 sigma", far)


def test_keys_and_seed():
    con = table(make_log())
    private = {"mechanism", "private", "unit", "epsilon", "delta", "n_states", "n_actions",
               "max_states", "default_action", "min_count", "sigma", "sensitivity", "rho",
               "policy", "votes", "counts", "distribution", "stderr", "defaulted"}
    r = release(con)
    check(set(r) == private and r["private"] is True and r["unit"] == "expert"
          and r["mechanism"] == "dp_expert_policy", "a private release's keys", sorted(r))
    s1, s2, s3 = release(con, seed=7), release(con, seed=7), release(con, seed=8)
    check(set(s1) == private | {"seeded"} and s1["seeded"] is True and s1["private"] is False,
          "a seeded release says so")
    check(s1 == s2 and s1["votes"] != s3["votes"], "seeded: reproducible, and the seed matters")
    d = release(con, release="diagnostic")
    check(set(d) == private | {"grid", "grid_steps", "experts", "exact_votes", "exact_counts"},
          "a diagnostic release's keys", sorted(d))
    check(len(r["votes"]) == 4 and all(len(v) == 3 for v in r["votes"]) and len(r["counts"]) == 4
          and len(r["distribution"]) == 4 and len(r["policy"]) == 4 and len(r["defaulted"]) == 4,
          "per state: A votes, a count, a distribution, an action, a flag")
    # post-processing, checked from the released numbers alone
    ok = True
    for s in range(4):
        v, n = r["votes"][s], r["counts"][s]
        if n < r["min_count"]:
            ok &= r["defaulted"][s] and r["policy"][s] == 0 and r["stderr"][s] is None
        else:
            ok &= not r["defaulted"][s] and r["policy"][s] == v.index(max(v))
            ok &= math.isclose(r["stderr"][s], r["sigma"] / max(n, 1))
        ok &= math.isclose(sum(r["distribution"][s]), 1)
    check(ok, "policy, defaulted, stderr and distribution follow from votes and counts")
    check(math.isclose(r["min_count"], 3 * r["sigma"]), "min_count defaults to 3 sigma")
    check(math.isclose(r["sensitivity"], math.sqrt(2 * 4), rel_tol=1e-5),
          "sensitivity sqrt(2 n_states) (up to the grid's rounding term)")
    r = release(con, min_count=0.5, max_states=2)
    check(r["min_count"] == 0.5 and math.isclose(r["sensitivity"], 2, rel_tol=1e-5),
          "min_count as given; max_states 2: sensitivity sqrt(4)")


def test_keys_and_rows():
    # integer and text keys alike; an expert's episodes may reuse numbers
    rows = [(1, 0, 0, 0, 1), (1, 1, 0, 0, 1), (2, 0, 0, 0, 0), ("x", "e", 5, 1, 2)]
    con = table(rows)
    r = release(con, release="diagnostic")
    check(r["exact_votes"][0] == [1, 1, 0] and r["exact_votes"][1] == [0, 0, 1] and r["exact_counts"] == [2, 1, 0, 0]
          and r["experts"] == 3, "integer and text keys; episode numbers per expert", r)
    # five NULLs: no step; a group with only such a row is released over no experts
    con.execute("INSERT INTO log VALUES (NULL, NULL, NULL, NULL, NULL)")
    r2 = release(con, release="diagnostic")
    check(r2["exact_votes"] == r["exact_votes"] and r2["experts"] == 3,
          "a row of five NULLs adds nothing")
    empty = table([(None,) * 5])
    r = release(empty, release="diagnostic", seed=1)
    check(r["experts"] == 0 and r["exact_counts"] == [0] * 4 and len(r["votes"]) == 4,
          "no experts at all: a release of noise alone", r)
    none = table([(1, 1, 1, 1, 1)])
    got = none.execute(CALL + " WHERE 0", (options(),)).fetchone()[0]
    check(got is None, "no rows: NULL (SQLite never passes the options)")


def test_errors():
    con = table(make_log(experts=3))
    fn = "dp_expert_policy: "

    def err(sql, params, want, name):
        msg = sql_error(con, sql, params)
        check(msg is not None and msg.startswith(fn) and want in msg, name, msg)

    col = "SELECT dp_expert_policy({}, ?) FROM log"
    err(col.format("expert, episode, t, state, action + 3"), (options(),),
        "action must be in 0..n_actions-1 = 0..2, got", "an action out of range names it")
    err(col.format("expert, episode, t, state, -1"), (options(),),
        "action must be in 0..n_actions-1 = 0..2, got -1", "a negative action")
    err(col.format("expert, episode, t, state + 4, action"), (options(),),
        "state must be in 0..n_states-1 = 0..3, got", "a state out of range names it")
    err(col.format("expert, episode, t, state + 4, action"), (options(),),
        "(row with expert text 'dr", "... and the row")
    err(col.format("expert, episode, t, state, NULL"), (options(),),
        "action must be an integer, got NULL", "a NULL action")
    err(col.format("NULL, episode, t, state, action"), (options(),),
        "expert must be an integer or text, got NULL", "a NULL expert (the others not NULL)")
    err(col.format("expert, episode, t + 0.5, state, action"), (options(),),
        "t must be an integer", "a t that is not an integer")
    err(col.format("expert, episode, 0, state, action"), (options(),),
        "a duplicate (expert, episode, t): expert 'dr", "a duplicate (expert, episode, t)")
    err(col.format("expert, episode, t, state, action"),
        (json.dumps({k: v for k, v in BASE.items() if k != "default_action"}),),
        "option default_action is required", "default_action is required")
    err(col.format("expert, episode, t, state, action"), (options(default_action=3),),
        "option default_action must be in [0, 2], got 3", "default_action out of range")
    for key in ("n_states", "n_actions", "epsilon", "delta"):
        err(col.format("expert, episode, t, state, action"),
            (json.dumps({k: v for k, v in BASE.items() if k != key}),),
            f"option {key} is required", f"missing bound: {key} is required")
    err(col.format("expert, episode, t, state, action"), (options(max_states=0),),
        "option max_states must be", "max_states 0")
    err(col.format("expert, episode, t, state, action"), (options(min_count=-1),),
        "option min_count must be >= 0", "a negative min_count")
    err(col.format("expert, episode, t, state, action"), (options(n_states=1 << 20, n_actions=1 << 10),),
        "is more than 2^26 cells", "too many cells")
    err(col.format("expert, episode, t, state, action"), (options(n_states=1 << 25, n_actions=2),),
        "SQLITE_LIMIT_LENGTH", "a result too large for the connection")
    err(col.format("expert, episode, t, state, action"), (options(agreement=0.5),),
        'unknown option "agreement"', "dp_plan's options are not the release's")
    err("SELECT dp_expert_policy(expert, episode, t, state, action, json_set(?, '$.seed', t)) "
        "FROM log", (options(),), "options must be the same for every row", "options per row")


def ledger(path):
    con = connect(path)
    con.isolation_level = None
    return con


def test_budget():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "l.db")
    rows = [(h * 10 + x, ep, t, (x + t) % 4, (h + t) % 3, h)
            for h in range(3) for x in range(5) for ep in range(2) for t in range(3)]
    con = ledger(path)
    con.execute("CREATE TABLE log(expert, episode, t, state, action, hospital)")
    con.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?, ?)", rows)
    con.execute("SELECT dprl_budget('x', 5, 1e-5, '{\"unit\": \"expert\"}')").fetchone()
    con.execute("SELECT dprl_budget('e', 5, 1e-5, '{\"unit\": \"episode\"}')").fetchone()
    r = release(con, budget="x")
    led = con.execute("SELECT count(*), total(epsilon), max(rho), max(function) FROM dprl_ledger "
                      "WHERE budget = 'x'").fetchone()
    check(led[0] == 1 and led[1] == 1 and led[3] == "dp_expert_policy"
          and math.isclose(led[2], r["rho"], rel_tol=1e-12),
          "charged once to an expert budget, with its rho", led)
    check(math.isclose(r["rho"], 1 / (2 * (r["sigma"] / r["sensitivity"]) ** 2), rel_tol=1e-6),
          "rho = Delta^2 / (2 sigma^2)", r["rho"])
    msg = sql_error(con, CALL, (options(budget="e"),))
    check(msg and "expert" in msg and "episode" in msg and
          con.execute("SELECT count(*) FROM dprl_ledger WHERE budget = 'e'").fetchone()[0] == 0,
          "refused by an episode budget, nothing charged", msg)
    for bad, why in (({"seed": 1}, "seed"), ({"release": "diagnostic"}, "diagnostic")):
        msg = sql_error(con, CALL, (options(budget="x", **bad),))
        check(msg and why in msg, f"a {why} release is refused under a budget", msg)
    by_h = ("SELECT hospital, dp_expert_policy(expert, episode, t, state, action, ?) "
            "FROM log GROUP BY hospital")
    got = con.execute(by_h, (options(budget="x"),)).fetchall()
    led = con.execute("SELECT count(*), total(epsilon) FROM dprl_ledger WHERE budget = 'x'").fetchone()
    check(len(got) == 3 and led == (2, 2.0),
          "GROUP BY hospital (a partition of the experts): one charge for three releases", led)
    # an expert in two groups: GROUP BY episode puts every expert in both
    out, msg = [], None
    try:
        for row in con.execute("SELECT episode, dp_expert_policy(expert, episode, t, state, action, ?) "
                               "FROM log GROUP BY episode", (options(budget="x"),)):
            out.append(row)
    except Exception as e:  # noqa: BLE001
        msg = str(e)
    check(msg and "an expert appears in two groups" in msg and len(out) <= 1,
          "an expert in two groups of one statement is refused", msg)
    # a public list of hospitals LEFT JOINed: the empty one is released too
    con.execute("CREATE TABLE hospitals(h)")
    con.executemany("INSERT INTO hospitals VALUES (?)", [(0,), (1,), (2,), (3,)])
    got = con.execute("SELECT h, dp_expert_policy(expert, episode, t, state, action, ?) FROM "
                      "hospitals LEFT JOIN log ON hospital = h GROUP BY h",
                      (options(budget="x"),)).fetchall()
    check(len(got) == 4 and json.loads(got[3][1])["private"] is True,
          "a LEFT JOIN from the public hospitals: a hospital without rows is released too")


def test_attack():
    """Two logs that differ by one expert (deterministic at every state, the
    worst case): over seeded releases, the separation of the best linear
    test (the projection on the expert's contribution) is at most mu."""
    S, A, N = 5, 2, 800
    base = [(x, ep, t, (x + t) % S, (x * t + ep) % A) for x in range(8) for ep in range(2)
            for t in range(S)]
    extra = [(99, 0, t, t, 1) for t in range(S)]
    o = {"n_states": S, "n_actions": A, "epsilon": 4, "delta": 1e-6, "default_action": 0}
    stats = []
    for rows, first in ((base, 1), (base + extra, N + 1)):
        con = table(rows)
        stat = []
        for seed in range(first, first + N):
            r = json.loads(con.execute(CALL, (json.dumps(dict(o, seed=seed)),)).fetchone()[0])
            # direction of the extra expert: (e_1 per state, count 1 per state)
            stat.append(sum(r["votes"][s][1] + r["counts"][s] for s in range(S)))
        stats.append(stat)
    sigma, sens = r["sigma"], r["sensitivity"]
    norm = math.sqrt(2 * S)
    z = [[x / (norm * sigma) for x in st] for st in stats]
    m0, m1 = sum(z[0]) / N, sum(z[1]) / N
    sd = math.sqrt((sum((x - m0) ** 2 for x in z[0]) + sum((x - m1) ** 2 for x in z[1])) / (2 * N - 2))
    sep, mu = (m1 - m0) / sd, sens / sigma
    margin = 4 * math.sqrt(2 / N)
    check(sep <= mu + margin, f"the attack separates by {sep:.3f} <= mu {mu:.3f} + {margin:.3f}")
    check(sep >= mu - margin, f"... and reaches it: {sep:.3f} >= mu - margin (the test has power)")
    check(abs(sd - 1) < 5 / math.sqrt(2 * N), f"the statistic's sd is sigma ||d|| ({sd:.3f})")


def test_interrupt():
    # 2^22 states: seconds of noise and JSON; and 4 million rows: the sort
    con = table([(1, 1, 0, 0, 0)])
    o = options(n_states=1 << 22, n_actions=2)
    cpu, err = interrupted(con, CALL, (o,), after=0.3)
    check(err and err[1] == 9 and 0 <= cpu < 0.3, "a release of 2^22 states stops when interrupted",
          f"{cpu} {err}")
    sql = ("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4000000) "
           "SELECT dp_expert_policy(i % 5000, i / 5000, i % 7, i % 4, i % 3, ?) FROM n")
    cpu, err = interrupted(con, sql, (options(),), after=0.8)
    check(err and err[1] == 9 and 0 <= cpu < 0.3, "a release of 4 million rows stops when interrupted",
          f"{cpu} {err}")


run([test_exact_votes, test_keys_and_seed, test_keys_and_rows, test_errors, test_budget,
     test_attack, test_interrupt])
