"""dp_prefix_stable through SQL: the released prefixes and their columns
(no caller key or t), the required public L and T, T runs drawn with
replacement whatever the number of trajectories, tiny epsilon, the accountant against an independent
computation (dp_prefix_calibrate), and every option / policy / input error."""
import json
import math
import os
import sqlite3
import tempfile
from decimal import Decimal, getcontext

from harness import check, check_close, check_error, connect, run, sized, sql_error

COLS = ["release", "step", "state", "action", "next_state"]
Q = ("SELECT release, step, state, action, next_state FROM dp_prefix_stable("
     "'SELECT episode, t, state, action FROM steps', "
     "'SELECT expert, state, action, prob FROM policies', ?) ORDER BY release, step")
T0 = 1700000000  # Unix timestamps as t: a caller's t must never come out


def key(ep):
    return f"patient-{ep} (Dr. {ep % 3})"


def setup(m, n_traj, length, j0, p_min=1e-3, lengths=None, path=":memory:"):
    """m experts, states {0, 1}, actions {0, 1, 2}: every expert plays
    action 0 with prob 1 - 2 p_min and actions 1, 2 with p_min.  Each
    trajectory plays action 0 until step j0 (1-based), where it plays
    action 1, which every expert gives only p_min.  Episode keys are text
    naming a patient and a doctor, t are Unix timestamps."""
    con = connect(path)
    con.execute("CREATE TABLE policies(expert, state, action, prob)")
    con.executemany("INSERT INTO policies VALUES (?,?,?,?)",
                    [(f"dr{e}", s, a, 1 - 2 * p_min if a == 0 else p_min)
                     for e in range(m) for s in (0, 1) for a in (0, 1, 2)])
    con.execute("CREATE TABLE steps(episode, t, state, action)")
    rows = []
    for ep in range(n_traj):
        for j in range(1, (lengths[ep] if lengths else length) + 1):
            rows.append((key(ep), T0 + 60 * j, (ep + j) % 2, 1 if j == j0 else 0))
    con.executemany("INSERT INTO steps VALUES (?,?,?,?)", rows)
    return con, rows


def trajectories(rows):
    """episode -> [(state, action), ...] in t order."""
    by = {}
    for e, t, s, a in sorted(rows, key=lambda r: (r[0], r[1])):
        by.setdefault(e, []).append((s, a))
    return by


def releases(out):
    """release -> [(step, state, action, next_state), ...]."""
    per = {}
    for r, j, s, a, nxt in out:
        per.setdefault(r, []).append((j, s, a, nxt))
    return per


def numbered_1_to_R(per):
    return (sorted(per) == list(range(1, len(per) + 1)) and
            all([x[0] for x in v] == list(range(1, len(v) + 1)) for v in per.values()))


def matches_prefix(rel, trajs):
    """The episodes of which rel (a list of (step, s, a, next)) is an exact
    prefix, next states included (NULL exactly where the episode ends)."""
    hits = []
    for e, tr in trajs.items():
        k = len(rel)
        if k > len(tr):
            continue
        ok = all((s, a) == tr[j] for j, (_, s, a, _n) in enumerate(rel))
        ok = ok and all(n == (tr[j + 1][0] if j + 1 < len(tr) else None)
                        for j, (_, _s, _a, n) in enumerate(rel))
        if ok:
            hits.append(e)
    return hits


# ---- an independent accountant (ALGORITHMS.md section 10), in Decimal ----

getcontext().prec = 60


def kov_delta(k, eps0, delta0, eps):
    """1 - (1 - delta0)^k (1 - delta_k(eps)), every term of Kairouz-Oh-
    Viswanath's sum in 60-digit decimal arithmetic with exact binomials."""
    e0, ep, d0 = Decimal(eps0), Decimal(eps), Decimal(delta0)
    s = Decimal(0)
    for l in range(k + 1):
        t = ((k - l) * e0).exp() - (ep + l * e0).exp()
        if t > 0:
            s += math.comb(k, l) * t
    dk = s / (1 + e0.exp()) ** k
    return 1 - (1 - d0) ** k * (1 - dk)


def composed(eps_prime, eps1, delta1, T):
    return kov_delta(T, 2 * eps_prime, delta1 / (2 * T), eps1)


def optimal_eps_prime(eps1, delta1, T):
    """The largest eps' whose T-fold composition is (eps1, <= delta1)."""
    lo, hi = eps1 / (2 * T), eps1
    assert composed(lo, eps1, delta1, T) <= Decimal(delta1)
    while composed(hi, eps1, delta1, T) <= Decimal(delta1):
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        if composed(mid, eps1, delta1, T) <= Decimal(delta1):
            lo = mid
        else:
            hi = mid
    return lo


def threshold(eps_prime, p_min, T, L, delta1):
    """theta + (4/eps') ln(1/delta') of section 7."""
    c_min = math.exp(eps_prime) / (math.exp(eps_prime) - 1)
    return c_min / p_min + (4 / eps_prime) * math.log(2 * T * L / delta1)


def margins(eps, delta, p_min, T, L, count_above, count_below):
    """In units of the query's Laplace scale 4/eps' (ALGORITHMS.md §7)."""
    ep = optimal_eps_prime(eps, delta, T)
    base, b = threshold(ep, p_min, T, L, delta), 4 / ep
    return (count_above - base) / b, (base - count_below) / b


def calibrate(con, **o):
    return json.loads(con.execute("SELECT dp_prefix_calibrate(?)", (json.dumps(o),)).fetchone()[0])


# ---- tests ----------------------------------------------------------------

def test_cliff():
    # m = 20000, j0 = 6: counts before the cliff are >= 20000 * 0.998^5 =
    # 19800; at the cliff <= 19800 * 1e-3 = 19.8.  Both margins are hundreds
    # of Laplace scales, so a failure has probability < e^-100.
    m, n, L, j0 = 20000, 12, 9, 6
    con, rows = setup(m, n, L, j0)
    o = {"epsilon": 20, "delta": 0.1, "p_min": 1e-3, "T": n, "L": L, "seed": 5}
    above, below = margins(20, 0.1, 1e-3, n, L, m * 0.998 ** (j0 - 1),
                           m * 0.998 ** (j0 - 1) * 1e-3)
    check(above > 100 and below > 100, "cliff: margins are > 100 Laplace scales",
          f"{above} {below}")
    cur = con.execute(Q, (json.dumps(o),))
    cols = [d[0] for d in cur.description]
    out = cur.fetchall()
    check(cols == COLS, "columns are release, step, state, action, next_state", cols)
    per = releases(out)
    check(numbered_1_to_R(per) and len(per) == n and
          all(len(v) == j0 - 1 for v in per.values()),
          "cliff: n releases numbered 1..n, each of prefix length j0 - 1, steps 1..k",
          {k: len(v) for k, v in per.items()})
    trajs = trajectories(rows)
    hits = [matches_prefix(v, trajs) for v in per.values()]
    check(all(hits), "released rows are exact prefixes of the input, next_state included")
    o2 = dict(o)
    del o2["seed"]
    per2 = releases(con.execute(Q, (json.dumps(o2),)).fetchall())
    # each run draws its own trajectory (with replacement): which ones
    # differ between draws, the prefix length and the exactness do not
    check(numbered_1_to_R(per2) and len(per2) == n and
          all(len(v) == j0 - 1 and matches_prefix(v, trajs) for v in per2.values()),
          "cliff: secure noise releases T prefixes of length j0 - 1, exact prefixes")


def test_no_caller_ids():
    # The attack: episode keys such as 'patient-X (Dr. X)' and Unix
    # timestamps used to come back exactly when their trajectory was
    # released.  Now no output cell holds a caller key or t.
    m, n, L = 20000, 10, 5
    con, rows = setup(m, n, L, j0=99)  # every step stable
    o = {"epsilon": 20, "delta": 0.1, "p_min": 1e-3, "T": n, "L": L, "seed": 3}
    out = con.execute(Q, (json.dumps(o),)).fetchall()
    keys = {r[0] for r in rows}
    ts = {r[1] for r in rows}
    cells = [c for r in out for c in r]
    check(len(out) == n * L, "every trajectory released whole", len(out))
    check(not any(c in keys for c in cells), "no episode key in the output",
          [c for c in cells if c in keys][:3])
    check(not any(c in ts for c in cells if isinstance(c, int)),
          "no caller t in the output", [c for c in cells if c in ts][:3])
    check(not any(isinstance(c, str) for c in cells), "no text at all in the output")
    per = releases(out)
    check(numbered_1_to_R(per), "release is 1..R and step is 1..k")


def test_whole_trajectories_and_T():
    m, n, L = 20000, 10, 5
    con, rows = setup(m, n, L, j0=99)  # no cliff: every step is stable
    o = {"epsilon": 20, "delta": 0.1, "p_min": 1e-3, "T": 4, "L": L, "seed": 1}
    out = con.execute(Q, (json.dumps(o),)).fetchall()
    per = releases(out)
    check(len(per) == 4 and len(out) == 4 * L, "T = 4: exactly 4 trajectories examined and "
          "released whole", (len(per), len(out)))
    last = [r for r in out if r[1] == L]
    check(len(last) == 4 and all(r[4] is None for r in last),
          "the last step of a whole trajectory has next_state NULL")
    out_l = con.execute(Q, (json.dumps(dict(o, L=3)),)).fetchall()
    check(len(out_l) == 4 * 3 and all(r[4] is not None for r in out_l),
          "L = 3: prefixes stop at 3 steps and keep their next state")


def test_T_above_n_and_none():
    # T above the number of trajectories is not an error (its occurrence or
    # text would reveal that number): there are T runs, each drawing a
    # trajectory with replacement.
    m, n, L = 20000, 10, 4
    con, _ = setup(m, n, L, j0=99)
    big = sized(100000, 2000)  # runs, each examined: fewer in the sanitized pass
    o = {"epsilon": 20, "delta": 0.1, "p_min": 1e-3, "T": big, "L": L, "seed": 2}
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg is None, f"T = {big} > 10 trajectories: no error", msg)
    # eps' of the T = 1000 accounting is tiny: release at a large epsilon
    o = dict(o, epsilon=20000, T=1000)
    out = con.execute(Q, (json.dumps(o),)).fetchall()
    per = releases(out)
    check(sorted(per) == list(range(1, 1001)) and len(out) == 1000 * L,
          "T = 1000 > 10: 1000 runs, each releasing a whole trajectory", len(out))
    con.execute("DELETE FROM steps")
    check(con.execute(Q, (json.dumps(o),)).fetchall() == [],
          "no trajectories at all: nothing released, no error")
    for read in ("once", "twice"):
        check(con.execute(Q, (json.dumps({k: v for k, v in dict(o, read=read).items() if k != "seed"}),)).fetchall() == [],
              f"no trajectories, read {read}, unseeded: nothing released, no error")


def test_long_tail_changes_nothing():
    # One expert's 1000-step trajectory used to move the default L (the
    # longest trajectory) and with it the threshold by ln(L/L') query-noise
    # scales.  L is now a required public option: steps past L are never
    # examined, so the same seed gives the same release with or without
    # the long tail.
    m, n, L = 20000, 8, 6
    lengths = [8] * n
    con, rows = setup(m, n, L, j0=4, lengths=lengths)
    o = {"epsilon": 30, "delta": 0.1, "p_min": 1e-3, "T": n, "L": L, "seed": 9}
    before = con.execute(Q, (json.dumps(o),)).fetchall()
    con.executemany("INSERT INTO steps VALUES (?,?,?,?)",
                    [(key(3), T0 + 60 * j, j % 2, 2) for j in range(9, 1009)])
    after = con.execute(Q, (json.dumps(o),)).fetchall()
    check(before == after and len(before) > 0,
          "a 1000-step tail past L changes nothing (same seed, same release)",
          f"{before[:4]}\n{after[:4]}")
    for k in ("L", "T"):
        o2 = {x: v for x, v in o.items() if x != k}
        check_error(con, Q, f"dp_prefix_stable: option {k} is required",
                    f"option {k} is required (no default from the data)", (json.dumps(o2),))


def test_tiny_epsilon():
    con, _ = setup(20000, 8, 6, j0=99)
    out = con.execute(Q, (json.dumps({"epsilon": 1e-3, "delta": 0.1, "p_min": 1e-3,
                                      "T": 8, "L": 6}),)).fetchall()
    check(out == [], "epsilon = 1e-3: nothing is released (threshold far above m)")


def test_accountant():
    con = connect()
    # The paper's setting (T = 100, eps1 = 7.5, delta1 = 0.9/3000, L = 200,
    # p_min = 0.02), computed here independently: KOV's sum in Decimal.
    e1, d1, T, L, p = 7.5, 0.9 / 3000, 100, 200, 0.02
    want = optimal_eps_prime(e1, d1, T)
    thr = threshold(want, p, T, L, d1)
    paper = e1 / math.sqrt(32 * T * math.log(2 / d1))
    check(abs(want - 0.0905) < 5e-4 and abs(thr - 1405) < 1 and
          abs(paper - 0.0447) < 1e-4 and abs(threshold(paper, p, T, L, d1) - 2819) < 1,
          "independent: eps' 0.0447 -> 0.0905, threshold 2819 -> 1405",
          f"{paper} {want} {thr}")
    c = calibrate(con, epsilon=e1, delta=d1, p_min=p, T=T, L=L)
    check(c["accountant"] == "optimal" and c["mechanism"] == "dp_prefix_stable",
          "the default accountant is optimal, named in dp_prefix_calibrate", c)
    got = c["eps_prime"]
    check(composed(got, e1, d1, T) <= Decimal(d1),
          "eps' is on the safe side: its exact composition is (eps1, <= delta1)",
          f"{composed(got, e1, d1, T)} vs {d1}")
    check(got <= want and got > want * (1 - 1e-5),
          "eps' is the largest such (within 1e-5 of the independent bisection)",
          f"{got} vs {want}")
    check_close(c["threshold"], threshold(got, p, T, L, d1), "threshold from eps'", rel=1e-12)
    check(abs(float(composed(got, e1, d1, T)) - c["delta_composed"]) <= 1e-9 * d1,
          "delta_composed = the exact composition (independent)",
          f"{c['delta_composed']} vs {composed(got, e1, d1, T)}")
    # The paper's accountant keeps the printed eps' where it is valid ...
    cp = calibrate(con, epsilon=e1, delta=d1, p_min=p, T=T, L=L, accountant="paper")
    check(cp["accountant"] == "paper" and abs(cp["eps_prime"] - paper) <= 1e-14 * paper and
          composed(paper, e1, d1, T) <= Decimal(d1),
          "accountant paper: the printed eps' where its composition is valid", cp)
    # ... and is refused at the sample's eps1 = 100 and 300 (T = 100,
    # delta = 1e-3), where its exact composition exceeds delta1.
    for e in (100, 300):
        pe = e / math.sqrt(32 * 100 * math.log(2 / 1e-3))
        over = composed(pe, e, 1e-3, 100)
        o = {"epsilon": e, "delta": 1e-3, "p_min": 0.02, "T": 100, "L": 20,
             "accountant": "paper"}
        msg = sql_error(con, "SELECT dp_prefix_calibrate(?)", (json.dumps(o),))
        check(over > Decimal(1e-3) and msg is not None and
              msg.startswith('dp_prefix_calibrate: accountant "paper": eps\' = eps1/sqrt(32 T '
                             f'ln(2/delta1)) = {pe:.6g} does not give (epsilon {e}, delta '
                             '0.001)') and msg.endswith('use "accountant": "optimal"'),
              f"accountant paper refused at eps1 = {e} (independent delta {float(over):.3g})",
              msg)
        oo = dict(o, accountant="optimal")
        ep = calibrate(con, **oo)["eps_prime"]
        check(composed(ep, e, 1e-3, 100) <= Decimal(1e-3),
              f"eps1 = {e}: the optimal eps' composes (independent)")
    check_error(con, "SELECT dp_prefix_calibrate(?)",
                'dp_prefix_calibrate: option accountant must be one of "optimal", "paper", '
                'got "rdp"', "unknown accountant",
                (json.dumps({"epsilon": 1, "delta": 1e-5, "p_min": 0.1, "T": 5, "L": 5,
                             "accountant": "rdp"}),))


def test_errors():
    con, _ = setup(3, 2, 3, j0=2, p_min=0.1)
    o = {"epsilon": 1, "delta": 0.1, "p_min": 0.1, "T": 2, "L": 3}

    def err(msg, name, opts=o, sql=Q):
        check_error(con, sql, msg, name, (json.dumps(opts),))
    err("dp_prefix_stable: p_min must be in (0, 1/|A|) = (0, 0.333333), got 0.5",
        "p_min >= 1/|A| refused", dict(o, p_min=0.5))
    err("dp_prefix_stable: option epsilon is required", "epsilon required",
        {"delta": 0.1, "p_min": 0.1, "T": 2, "L": 3})
    err("dp_prefix_stable: option T must be in [1, 1e+06], got 1000001", "T above its public bound",
        dict(o, T=1000001))
    err("dp_prefix_stable: option epsilon must be in (0, 1e+06], got 2000000",
        "epsilon above its bound", dict(o, epsilon=2e6))
    err('dp_prefix_stable: unknown option "Tmax" (known: epsilon, delta, p_min, T, L, '
        'accountant, seed, budget, read)', "unknown option", dict(o, Tmax=3))
    con.execute("UPDATE policies SET prob = 0.05 WHERE expert = 'dr1' AND state = 0 AND action = 2")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg is not None and msg.startswith("dp_prefix_stable: policies: expert 'dr1', state 0, "
                                             "action 2: prob 0.05 < p_min 0.1"),
          "a prob below p_min is an error", msg)
    # option errors come first, whatever the data: the same message with a
    # broken policy table as with a valid one
    bad = dict(o, epsilon=100, delta=1e-3, T=100, accountant="paper")
    msg = sql_error(con, Q, (json.dumps(bad),))
    check(msg is not None and msg.startswith('dp_prefix_stable: accountant "paper"'),
          "option errors come before any row is read", msg)
    con.execute("UPDATE policies SET prob = 0.15 WHERE expert = 'dr1' AND state = 0 AND action = 2")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg is not None and "probabilities sum to" in msg and "expert 'dr1', state 0" in msg,
          "probabilities not summing to 1 is an error", msg)
    con.execute("UPDATE policies SET prob = 0.1 WHERE expert = 'dr1' AND state = 0 AND action = 2")
    con.execute("DELETE FROM policies WHERE expert = 'dr2' AND state = 1 AND action = 0")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg == "dp_prefix_stable: policies: missing (expert 'dr2', state 1, action 0)",
          "a missing (expert, state, action) is an error", msg)
    con.execute("INSERT INTO policies VALUES ('dr2', 1, 0, NULL)")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg == "dp_prefix_stable: policies_sql: prob must be a number, got NULL",
          "a NULL prob is an error", msg)
    con.execute("UPDATE policies SET prob = 0.8 WHERE prob IS NULL")
    con.execute("INSERT INTO policies VALUES ('dr2', 1, 0, 0.8)")
    msg = sql_error(con, Q, (json.dumps(o),))
    check(msg == "dp_prefix_stable: policies: duplicate (expert 'dr2', state 1, action 0)",
          "a duplicate policy row is an error", msg)
    con.execute("DELETE FROM policies WHERE rowid = (SELECT max(rowid) FROM policies)")
    check(sql_error(con, Q, (json.dumps(o),)) is None, "the repaired policy table is accepted")
    check(sql_error(con, Q, (json.dumps(dict(o, T=3)),)) is None,
          "T = 3 above the 2 trajectories is no error")
    # Only drawn trajectories are read (test_unexamined_not_read): T = 100
    # runs drawing from 3 trajectories miss episode 7 with probability
    # (2/3)^100 < 1e-17.
    con.execute("INSERT INTO steps VALUES (7, 0, 5, 0)")
    err("dp_prefix_stable: trajectories_sql: state 5 is not in the policy table (policies_sql)",
        "a trajectory state not in the policies is an error", dict(o, T=100))
    con.execute("UPDATE steps SET state = 0, action = 9 WHERE episode = 7")
    err("dp_prefix_stable: trajectories_sql: action 9 is not in the policy table (policies_sql)",
        "a trajectory action not in the policies is an error", dict(o, T=100))
    con.execute("UPDATE steps SET action = 0 WHERE episode = 7")
    con.execute("INSERT INTO steps VALUES (7, 0, 1, 0)")
    msg = sql_error(con, Q, (json.dumps(dict(o, T=100)),))
    check(msg == "dp_prefix_stable: duplicate (episode, t) = (7, 0)",
          "a duplicate (episode, t) in an examined trajectory is an error", msg)
    con.execute("DELETE FROM steps WHERE episode = 7")
    con.execute("INSERT INTO steps VALUES (2.5, 0, 0, 0)")
    msg = sql_error(con, Q, (json.dumps(dict(o, T=1)),))
    check(msg is not None and msg.startswith("dp_prefix_stable: trajectories_sql: episode must be "
                                             "an integer or text, got 2.5"),
          "an episode key that is neither integer nor text is an error, whatever T", msg)
    con.execute("DELETE FROM steps WHERE episode = 2.5")
    con.execute("DELETE FROM steps WHERE episode = 7")
    err("dp_prefix_stable: policies_sql must return 4 columns, got 3", "policies_sql columns",
        sql=Q.replace("expert, state, action, prob", "expert, state, action"))
    err("dp_prefix_stable: policies_sql must not contain parameters (?, :name)",
        "a parameter in policies_sql is refused (nothing would bind it)",
        sql=Q.replace("FROM policies'", "FROM policies WHERE prob > ?'"))
    err("dp_prefix_stable: trajectories_sql must not write (a read-only SELECT)",
        "trajectories_sql that writes",
        sql=Q.replace("'SELECT episode, t, state, action FROM steps'", "'DELETE FROM steps'"))
    check(con.execute("SELECT count(*) FROM steps").fetchone()[0] == 6, "user tables untouched")
    check_error(con, "SELECT * FROM dp_prefix_stable('SELECT * FROM steps', "
                "'SELECT * FROM policies')", "dp_prefix_stable: argument options is required",
                "missing options argument")
    con.execute("DROP TABLE steps")
    check(sql_error(con, "SELECT 1") is None, "statements finalized: DROP TABLE works after errors")


# ---- only the examined trajectories are read (ALGORITHMS.md section 7.1) ----

QI = ("SELECT release, step, state, action, next_state FROM dp_prefix_stable("
      "?, 'SELECT expert, state, action, prob FROM policies', ?) ORDER BY release, step")


def ident_setup(n, con=None, table="steps", decl="episode, t, state, action"):
    """n trajectories of 2 steps; trajectory i visits state i twice with
    action 0 (so its released rows name it), keys alternate integers and
    text.  50 experts play action 0 with prob 0.4 and 1, 2 with 0.3: at
    p_min = 0.3 and a large epsilon every examined trajectory is released
    whole (count 50 * 0.4^2 = 8 against a threshold of about 3.4), so the
    released states are the examined trajectories, in examination order."""
    con = con or connect()
    if not con.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'policies'").fetchone()[0]:
        con.execute("CREATE TABLE policies(expert, state, action, prob)")
        con.executemany("INSERT INTO policies VALUES (?,?,?,?)",
                        [(e, s, a, 0.4 if a == 0 else 0.3)
                         for e in range(50) for s in range(n) for a in range(3)])
    con.execute(f"CREATE TABLE {table}({decl})")
    con.executemany(f"INSERT INTO {table} VALUES (?,?,?,?)",
                    [(ident_key(i), t, i, 0) for i in range(n) for t in (5, 9)])
    return con


def ident_key(i):
    return i * 1000 if i % 2 == 0 else f"ep-{i}"


def examined(con, T, seed, sql="SELECT episode, t, state, action FROM steps", read=None):
    """The trajectories (states) released, in order; the error if any."""
    o = {"epsilon": 1e4, "delta": 0.1, "p_min": 0.3, "T": T, "L": 2, "seed": seed}
    if read:
        o["read"] = read
    try:
        out = con.execute(QI, (sql, json.dumps(o))).fetchall()
    except Exception as e:  # noqa: BLE001 - the error is the observation
        return None, str(e)
    return [r[2] for r in out if r[1] == 1], None


def test_unexamined_not_read():
    # One trajectory has a state the policies do not know, or a duplicate
    # t.  Only examined trajectories are checked, reading twice or once (a
    # key that was in the one pass's reservoir for a while, and left it, is
    # not examined either): a seeded call fails exactly when, on the same
    # keys with the row repaired, the same seed examines (and so releases)
    # that trajectory.  Before, every call failed.
    n, T, bad = 20, 2, 7
    for read in ("twice", "once"):
        con = ident_setup(n)
        seeds = range(1, sized(200, 100) + 1)
        ok_rep, want = True, {}
        for sd in seeds:
            got, e = examined(con, T, sd, read=read)
            ok_rep &= e is None and len(got) == T
            want[sd] = bad in got
        check(ok_rep, f"{read}: every examined trajectory is released whole (the setup works)")
        for what, sql, msg in (
                ("a state not in the policies", "UPDATE steps SET state = 99 WHERE state = ? AND t = 9",
                 "dp_prefix_stable: trajectories_sql: state 99 is not in the policy table "
                 "(policies_sql)"),
                ("a duplicate t", "UPDATE steps SET t = 5 WHERE state = ? AND t = 9",
                 "dp_prefix_stable: duplicate (episode, t) = ('ep-7', 5)")):
            c2 = ident_setup(n)
            c2.execute(sql, (bad,))
            agree, errors = True, 0
            for sd in seeds:
                got, e = examined(c2, T, sd, read=read)
                if e is not None:
                    errors += 1
                    agree &= want[sd] and e == msg
                else:
                    agree &= not want[sd]
            check(agree, f"{read}, {what}: an error exactly when the bad trajectory is examined",
                  errors)
            # drawn by one of T = 2 runs with p = 1 - (19/20)^2 = 0.0975: 19.5 of
            # 200 expected, 6 standard errors (4.2) either side
            p, k = 1 - (1 - 1 / n) ** T, len(seeds)
            check(0 < errors < k and abs(errors - k * p) <= 6 * math.sqrt(k * p * (1 - p)),
                  f"{read}, {what}: the bad trajectory is examined in 1 - (1 - 1/n)^T of "
                  "the runs", errors)
    con.execute("UPDATE steps SET state = 99 WHERE state = ? AND t = 9", (bad,))
    msg = sql_error(con, QI, ("SELECT episode, t, state, action FROM steps",
                              json.dumps({"epsilon": 1e4, "delta": 0.1, "p_min": 0.3,
                                          "T": 400, "L": 2, "seed": 1})))
    # 400 runs miss a given trajectory of 20 with probability (19/20)^400 < 1e-8
    check(msg is not None and "state 99" in msg, "T = 400 draws (and checks) the bad trajectory")


def test_sampling_uniform():
    # T = 2 runs, n = 6: each run draws with replacement, so the pair of
    # trajectories examined is uniform over all 36 ordered pairs, repeats
    # included; chi-square over 3000 seeds (1000 in the sanitized pass).
    n, T, runs = 6, 2, sized(3000, 1000)  # at least 27 expected per cell either way
    con = ident_setup(n)
    counts = {}
    for sd in range(runs):
        got, e = examined(con, T, 10000 + sd)
        counts[tuple(got or ())] = counts.get(tuple(got or ()), 0) + 1
    pairs = [(a, b) for a in range(n) for b in range(n)]
    check(sorted(counts) == sorted(pairs), "every ordered pair, repeats included, no other",
          sorted(counts)[:5])
    e = runs / len(pairs)
    chi2 = sum((counts.get(p, 0) - e) ** 2 / e for p in pairs)
    # 35 degrees of freedom: P(chi2 > 90) < 1e-6
    check(chi2 < 90, "the examined pair is uniform (chi-square, 35 df, < 90)", chi2)


def test_count_hides_n():
    # The attack: with T at or above the number of trajectories, every one
    # was examined once, so at a large epsilon the number of releases was
    # that number (T = 50: 41 releases in every run with an extra
    # trajectory, 40 without).  Now each of the T runs draws its trajectory
    # uniformly with replacement: 40 or 41 trajectories, seeded or not, one
    # pass or two, exactly 50 releases numbered 1..50 by run.
    T = 50
    o = {"epsilon": 1e4, "delta": 0.1, "p_min": 0.3, "T": T, "L": 2}
    sql = "SELECT episode, t, state, action FROM steps"
    for n in (40, 41):
        con = ident_setup(n)
        shapes = set()
        for read in ("once", "twice"):
            for sd in list(range(1, 61)) + [None] * 5:
                opts = dict(o, read=read) if sd is None else dict(o, read=read, seed=sd)
                out = con.execute(QI, (sql, json.dumps(opts))).fetchall()
                shapes.add((tuple(sorted({r[0] for r in out})), len(out)))
        check(shapes == {(tuple(range(1, T + 1)), 2 * T)},
              f"n = {n}: every call releases T = 50 prefixes, numbered 1..50 by run",
              sorted(shapes)[:3])


def test_draw_uniform():
    # Each run's trajectory is uniform on the n trajectories: 60 seeds x
    # T = 50 runs over n = 7, each way of reading.
    n, T = 7, 50
    con = ident_setup(n)
    for read in ("once", "twice"):
        counts = [0] * n
        for sd in range(60):
            got, _ = examined(con, T, 30000 + sd, read=read)
            for x in got:
                counts[x] += 1
        e = 60 * T / n
        chi2 = sum((c - e) ** 2 / e for c in counts)
        # 6 degrees of freedom: P(chi2 > 40) < 1e-6
        check(sum(counts) == 60 * T and chi2 < 40,
              f"{read}: each run's trajectory is uniform (chi-square, 6 df, < 40)", (chi2, counts))


def interleave(con, n):
    """steps_mixed: the rows of steps with every episode's two rows far
    apart (all first rows, then all second rows, in another key order)."""
    con.execute("CREATE TABLE steps_mixed AS SELECT * FROM steps "
                f"ORDER BY t, state * 7 % {n} DESC")


def test_one_pass_uniform():
    # "read": "once" (Algorithm R over first occurrences, a shuffle, then
    # the runs drawn with replacement from it): the ordered pair examined
    # is uniform over the 36 pairs, with every trajectory's rows together
    # and with them far apart; each examined trajectory is released whole
    # (both of its rows).
    n, T, runs = 6, 2, sized(3000, 1000)  # at least 27 expected per cell either way
    con = ident_setup(n)
    interleave(con, n)
    pairs = [(a, b) for a in range(n) for b in range(n)]
    for table in ("steps", "steps_mixed"):
        sql = f"SELECT episode, t, state, action FROM {table}"
        o = {"epsilon": 1e4, "delta": 0.1, "p_min": 0.3, "T": T, "L": 2, "read": "once"}
        counts, whole = {}, True
        for sd in range(runs):
            out = con.execute(QI, (sql, json.dumps(dict(o, seed=20000 + sd)))).fetchall()
            got = tuple(r[2] for r in out if r[1] == 1)
            whole &= len(out) == 2 * T and all(r[2] == r[4] for r in out if r[1] == 1)
            counts[got] = counts.get(got, 0) + 1
        check(whole, f"one pass, {table}: every examined trajectory released whole")
        check(sorted(counts) == sorted(pairs), f"one pass, {table}: every ordered pair, no other",
              sorted(counts)[:5])
        e = runs / len(pairs)
        chi2 = sum((counts.get(p, 0) - e) ** 2 / e for p in pairs)
        # 35 degrees of freedom: P(chi2 > 90) < 1e-6
        check(chi2 < 90, f"one pass, {table}: the examined pair is uniform (chi-square < 90)", chi2)


def test_one_pass_is_default_unseeded():
    # Which statements run (the connection's trace): without a seed or an
    # index, one scan that reads the rows of the reservoir's keys; with a
    # seed, two passes (the seeded release then does not depend on the
    # order of the rows); with an index, the seeks.  "read" overrides.
    n = 40
    con = ident_setup(n)
    ran = []
    con.set_trace_callback(ran.append)
    o = {"epsilon": 1e4, "delta": 0.1, "p_min": 0.3, "T": 3, "L": 2}

    def passes(opts):
        ran.clear()
        out = con.execute(QI, ("SELECT episode, t, state, action FROM steps",
                               json.dumps(opts))).fetchall()
        text = " ".join(ran)
        return (len(out), "count(CASE WHEN dprl_prefix_key(?1, e)" in text,
                "SELECT count(dprl_prefix_key(?1, e)) FROM dprl_ps_rows" in text,
                "FROM dprl_ps_rows WHERE dprl_prefix_key(?1, e)" in text,
                "COLLATE BINARY IN (" in text)
    check(passes(o) == (6, True, False, False, False), "no seed, no index: one pass", passes(o))
    check(passes(dict(o, seed=3)) == (6, False, True, True, False), "seeded: two passes",
          passes(dict(o, seed=3)))
    check(passes(dict(o, seed=3, read="once")) == (6, True, False, False, False),
          "seeded with read once: one pass")
    check(passes(dict(o, read="twice")) == (6, False, True, True, False), "read twice: two passes")
    con.execute("CREATE INDEX steps_ep_t ON steps(episode, t)")
    check(passes(o) == (6, False, False, False, True), "no seed, an index: seeks", passes(o))
    check(passes(dict(o, read="once")) == (6, True, False, False, False),
          "an index, read once: one pass")
    con.set_trace_callback(None)
    # the one pass seeded: the same rows in the same order give the same release
    a = [examined(con, 5, sd, read="once")[0] for sd in range(1, 6)]
    b = [examined(con, 5, sd, read="once")[0] for sd in range(1, 6)]
    check(a == b and all(len(x) == 5 for x in a), "one pass, seeded: reproducible", a[:2])
    raw = [examined(con, 5, sd, "SELECT episode, t, state, action FROM steps /* to the end",
                    read="once")[0] for sd in range(1, 6)]
    check(raw == a, "one pass over a text that cannot be wrapped (read row by row): the same",
          raw[:2])
    # T >= n: still T runs, each uniform on the n trajectories: 200 seeds x
    # 5 runs over 3 trajectories, every value at every run
    c3 = ident_setup(3)
    seqs = [tuple(examined(c3, 5, sd, read="once")[0]) for sd in range(200)]
    cells = {(c, x): 0 for c in range(5) for x in range(3)}
    for q in seqs:
        for c, x in enumerate(q):
            cells[(c, x)] += 1
    # 200 runs in 3 cells per run position: 10 df over the 5 positions,
    # P(chi2 > 50) < 1e-6
    chi2 = sum((v - 200 / 3) ** 2 / (200 / 3) for v in cells.values())
    check(all(len(q) == 5 for q in seqs) and sum(cells.values()) == 1000 and chi2 < 50,
          "one pass, T = 5 >= n = 3: 5 runs, each uniform on the 3 trajectories", (chi2, seqs[:3]))
    # an episode column that changes each time it is read (SQLite reads it
    # once to sample the key and again to take the row)
    msg = sql_error(con, QI, ("SELECT abs(random()) % 1000000, t, state, action FROM steps",
                              json.dumps(dict(o, read="once"))))
    check(msg == "dp_prefix_stable: trajectories_sql: the episode column must give the same "
          "value each time it is read (not random())",
          "one pass: an episode column that is not the same when read again is refused", msg)
    msg = sql_error(con, QI, ("SELECT episode, t, state, action FROM steps",
                              json.dumps(dict(o, read="sometimes"))))
    check(msg == 'dp_prefix_stable: option read must be one of "auto", "once", "twice", '
          'got "sometimes"', "read: an unknown choice is refused, named", msg)


def test_only_the_callers_rows():
    # The keys drawn are those of the rows the caller's query returns, even
    # when SQLite could test a condition of the wrapper before the caller's
    # join and WHERE: a cohort join keeps 5 of 10 trajectories, and each of
    # T = 5 runs draws one of those 5 (a key left out by the join, drawn as
    # an empty trajectory, would release nothing); a row whose key is a
    # REAL, removed by the caller's WHERE after a join, is no error.
    n = 10
    con = ident_setup(n)
    con.execute("CREATE TABLE cohort(episode PRIMARY KEY)")
    con.executemany("INSERT INTO cohort VALUES (?)", [(ident_key(i),) for i in range(5)])
    con.execute("INSERT INTO steps VALUES (1.5, 5, 0, 0)")
    joins = {
        "a cohort join": "SELECT s.episode, s.t, s.state, s.action FROM steps s "
                         "JOIN cohort c ON c.episode = s.episode",
        "a join, then the caller's WHERE": "SELECT s.episode, s.t, s.state, s.action FROM "
                                           "(SELECT DISTINCT episode e FROM steps) x JOIN steps s "
                                           "ON s.episode = x.e WHERE typeof(x.e) <> 'real' "
                                           "AND x.e IN (SELECT episode FROM cohort)"}
    for read in ("once", "twice"):
        msg = sql_error(con, QI, ("SELECT episode, t, state, action FROM steps WHERE "
                                  "dprl_prefix_key(?1, episode, t, state, action) IS NOT NULL",
                                  json.dumps({"epsilon": 1e4, "delta": 0.1, "p_min": 0.3,
                                              "T": 3, "L": 2, "read": read})))
        check(msg == "dp_prefix_stable: trajectories_sql must not contain parameters (?, :name)",
              f"{read}: a parameter in trajectories_sql (it could reach dprl's own) is refused",
              msg)
        for name, sql in joins.items():
            got = [examined(con, 5, sd, sql, read=read) for sd in range(1, 21)]
            check(all(e is None and len(g) == 5 and set(g) <= {0, 1, 2, 3, 4} for g, e in got)
                  and set().union(*(g for g, _ in got)) == {0, 1, 2, 3, 4},
                  f"{read}, {name}: every run draws one of the caller's 5 trajectories", got[:2])


def test_read_paths_agree():
    # The same rows give the same seeded release whichever way they are
    # read: a plain table (two scans through dprl_prefix_key), rows
    # inserted in another order, an index on (episode, t) (seeks, then IN),
    # T above SQLite's limit on parameters (the filtered scan again),
    # trailing semicolons and comments, a text that cannot be wrapped (read
    # as it is), a caller CTE, a join, and a NOCASE column (keys 'ep-1' and
    # 'EP-1' stay two trajectories).
    n, T = 40, 6
    con = ident_setup(n)
    base = [examined(con, T, sd)[0] for sd in range(1, 9)]
    check(all(b and len(b) == T for b in base), "plain table: T trajectories examined")

    def same(name, sql="SELECT episode, t, state, action FROM steps", c=con):
        got = [examined(c, T, sd, sql)[0] for sd in range(1, 9)]
        check(got == base, f"same seeded release: {name}", (got[:2], base[:2]))
    con.execute("CREATE TABLE shuffled AS SELECT * FROM steps ORDER BY state * 7 % 40 DESC, t DESC")
    same("rows in another order", "SELECT episode, t, state, action FROM shuffled")
    same("trailing semicolons and a comment",
         "SELECT episode, t, state, action FROM steps ;; -- the end")
    same("a comment without newline inside", "SELECT episode, t, state, action FROM steps -- c")
    same("an unterminated comment (the text cannot be wrapped: read as it is)",
         "SELECT episode, t, state, action FROM steps /* to the end")
    same("a caller CTE", "WITH x AS (SELECT * FROM steps) SELECT episode, t, state, action FROM x")
    con.execute("CREATE TABLE names(episode, label)")
    con.execute("INSERT INTO names SELECT DISTINCT episode, 'x' FROM steps")
    same("a join", "SELECT s.episode, t, state, action FROM steps s JOIN names USING (episode)")
    con.execute("CREATE INDEX steps_ep_t ON steps(episode, t)")
    plan = " ".join(r[3] for r in con.execute(
        "EXPLAIN QUERY PLAN WITH dprl_ps_rows(e, t, s, a) AS (SELECT episode, t, state, action "
        "FROM steps) SELECT e FROM dprl_ps_rows WHERE e COLLATE BINARY > ?1 "
        "ORDER BY e COLLATE BINARY LIMIT 1", (0,)))
    check(plan.startswith("SEARCH"), "with the index, the next key is a seek", plan)
    same("an index on (episode, t)")
    con.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, T - 1)
    same("T above the limit on SQL parameters")
    same("T above the limit, with the index")
    con.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 32766)
    check(con.execute("SELECT dprl_prefix_key(NULL, 5), dprl_prefix_key('x', 5), "
                      "dprl_prefix_key(?, 5), dprl_prefix_key(?, 5, 0, 0, 0)",
                      (12345, 12345)).fetchone() == (None, None, None, None),
          "dprl_prefix_key (what the scans call) is NULL when SQL calls it")
    # NOCASE: SQL's DISTINCT and IN would merge 'ep-1' and 'EP-1'
    c2 = ident_setup(n, table="steps", decl="episode COLLATE NOCASE, t, state, action")
    c2.execute("INSERT INTO steps VALUES ('EP-1', 5, 1, 0), ('EP-1', 9, 1, 0)")
    o = {"epsilon": 1e4, "delta": 0.1, "p_min": 0.3, "T": n + 1, "L": 2, "seed": 1}
    out = c2.execute(QI, ("SELECT episode, t, state, action FROM steps", json.dumps(o))).fetchall()
    check(len(out) == 2 * (n + 1), "a NOCASE column: 'ep-1' and 'EP-1' are two trajectories",
          len(out))
    c2.execute("CREATE INDEX steps_ep_t ON steps(episode, t)")
    out = c2.execute(QI, ("SELECT episode, t, state, action FROM steps", json.dumps(o))).fetchall()
    check(len(out) == 2 * (n + 1), "a NOCASE column with an index: two trajectories", len(out))
    o = dict(o, T=n)
    got = c2.execute(QI, ("SELECT episode, t, state, action FROM steps", json.dumps(o))).fetchall()
    check(len(got) == 2 * n, "a NOCASE column, T = n of n + 1: T trajectories read", len(got))


def test_policy_errors_name_caller_ids():
    """Policy errors name the caller's expert, state and action ids, not
    dprl's internal indices (states 7 and 3 and actions 20 and 10 arrive
    in an order that makes every index differ from its id)."""
    con = connect()
    con.execute("CREATE TABLE policies(expert, state, action, prob)")
    rows = [(e, s, a, 0.5) for e in (1000, 2000) for s in (7, 3) for a in (20, 10)]
    con.executemany("INSERT INTO policies VALUES (?,?,?,?)", rows)
    con.execute("CREATE TABLE steps(episode, t, state, action)")
    con.execute("INSERT INTO steps VALUES (1, 0, 7, 20)")
    o = json.dumps({"epsilon": 1, "delta": 0.1, "p_min": 0.1, "T": 1, "L": 1})

    def err(msg, name):
        check_error(con, Q, msg, name, (o,))
    check(sql_error(con, Q, (o,)) is None, "policy ids: a full table is accepted")
    con.execute("DELETE FROM policies WHERE expert = 2000 AND state = 3 AND action = 10")
    err("dp_prefix_stable: policies: missing (expert 2000, state 3, action 10)",
        "policy ids: missing names the caller's ids")
    con.execute("INSERT INTO policies VALUES (2000, 3, 10, 0.05), (2000, 3, 10, 0.5)")
    err("dp_prefix_stable: policies: duplicate (expert 2000, state 3, action 10)",
        "policy ids: duplicate names the caller's ids")
    con.execute("DELETE FROM policies WHERE rowid = (SELECT max(rowid) FROM policies)")
    err("dp_prefix_stable: policies: expert 2000, state 3, action 10: prob 0.05 < p_min 0.1",
        "policy ids: p_min names the caller's ids")
    con.execute("UPDATE policies SET prob = 0.4 WHERE prob = 0.05")
    msg = sql_error(con, Q, (o,))
    check(msg is not None and msg.startswith("dp_prefix_stable: policies: expert 2000, state 3: "
                                             "probabilities sum to 0.9"),
          "policy ids: a bad sum names the caller's ids", msg)


PLAN_KEYS = {"mechanism", "accountant", "epsilon", "delta", "p_min", "T", "L", "eps_prime", "threshold",
             "b_threshold", "b_query", "experts", "max_count", "agreement", "steps", "count",
             "release_probability", "expected_releases", "expected_length", "expected_transitions", "unit",
             "charged_as", "per_group", "useful", "why"}


def plan(con, **o):
    return json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(mechanism="dp_prefix_stable", **o)),)
                                  ).fetchone()[0])


def lap_diff_tail(t, b, b0):
    """P(Lap(b) - Lap(b0) > t), b != b0: the tail of their convolution."""
    if t < 0:
        return 1 - lap_diff_tail(-t, b, b0)
    return (b * b * math.exp(-t / b) - b0 * b0 * math.exp(-t / b0)) / (2 * (b * b - b0 * b0))


def test_plan():
    """dp_plan of dp_prefix_stable (ALGORITHMS.md section 7.2): the threshold
    is dp_prefix_calibrate's, the expected releases are T P(a count plus the
    query's Laplace noise passes the noisy threshold), issue 22's 240
    clinicians are told in advance that nothing can be released, the plan
    matches what seeded releases do, and its cost is what a real release
    charges to a budget."""
    con, _ = setup(2600, 50, 20, 0, p_min=0.02, path=os.path.join(tempfile.mkdtemp(), "plan.db"))
    con.commit()
    con.isolation_level = None
    # issue 22: 240 clinicians, epsilon 1, T = 100, L = 25
    o22 = dict(epsilon=1, delta=1e-6, p_min=0.02, T=100, L=25)
    p = plan(con, experts=240, agreement=0.9, **o22)
    c = calibrate(con, **o22)
    check(set(p) == PLAN_KEYS, "plan: its keys", sorted(set(p) ^ PLAN_KEYS))
    check(p["threshold"] == c["threshold"] and p["eps_prime"] == c["eps_prime"] and p["max_count"] == 240,
          "plan: the threshold is dp_prefix_calibrate's; a count reaches at most the 240 experts", p["threshold"])
    check(p["useful"] is False and p["why"].startswith("threshold 12,022 above the 240 experts (the most a "
                                                       "count can reach): no prefix can be released"),
          "plan: 240 clinicians: nothing can be released, said before any epsilon is spent", p["why"])
    want = 100 * lap_diff_tail(c["threshold"] - 216, c["b_query"], c["b_threshold"])
    check_close(p["expected_releases"], want, "plan: expected releases = T P(Lap(4/eps') - Lap(2/eps') > "
                "threshold - 0.9 x 240)", rel=1e-9)
    for acc, d in (("optimal", 3e-4), ("paper", 1e-5)):
        o = dict(epsilon=7.5, delta=d, p_min=0.02, T=100, L=200, accountant=acc)
        check(plan(con, experts=3000, agreement=0.9, **o)["threshold"] == calibrate(con, **o)["threshold"],
              f"plan: accountant {acc}: the threshold is dp_prefix_calibrate's")
    # the plan against seeded releases: every trajectory plays action 0, which
    # every expert gives 0.96, so a prefix of length j has count 2600 x 0.96^j
    o = dict(epsilon=7.5, delta=1e-5, p_min=0.02, T=200, L=20)
    p = plan(con, experts=2600, agreement=[0.96 ** j for j in range(1, 21)], **o)
    lengths = []
    for seed in range(1, 21):
        lengths += [k for (k,) in con.execute(
            "SELECT max(step) FROM dp_prefix_stable('SELECT episode, t, state, action FROM steps', "
            "'SELECT expert, state, action, prob FROM policies', ?) GROUP BY release",
            (json.dumps(dict(o, seed=seed)),))]
    runs, pr = 20 * 200, p["release_probability"]
    freq, mean = len(lengths) / runs, sum(lengths) / len(lengths)
    sd = math.sqrt(sum((k - mean) ** 2 for k in lengths) / (len(lengths) - 1))
    check(abs(freq - pr) <= 5 * math.sqrt(pr * (1 - pr) / runs),
          f"plan: {runs} seeded runs release a prefix as often as planned (5 s.e.)", (freq, pr))
    check(abs(mean - p["expected_length"]) <= 5 * sd / math.sqrt(len(lengths)),
          "plan: and as long (5 s.e.)", (mean, p["expected_length"]))
    # the cost: a real release under a budget of unit expert
    con.execute("SELECT dprl_budget('experts', 10, 1e-3, '{\"unit\": \"expert\"}')").fetchall()
    con.execute("SELECT count(*) FROM dp_prefix_stable('SELECT episode, t, state, action FROM steps', "
                "'SELECT expert, state, action, prob FROM policies', ?)",
                (json.dumps(dict(o, budget="experts")),)).fetchall()
    row = con.execute("SELECT function, epsilon, delta, rho FROM dprl_ledger").fetchall()
    check(row == [("dp_prefix_stable", p["epsilon"], p["delta"], None)] and p["charged_as"] == "epsilon, delta"
          and p["unit"] == "expert" and p["per_group"] is False,
          "plan: the real release's ledger row is the plan's (epsilon, delta), plain, unit expert", row)
    rem = json.loads(con.execute("SELECT dprl_budget_remaining('experts')").fetchone()[0])
    st = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps({
        "budget": {"epsilon": 10, "delta": 1e-3, "unit": "expert"},
        "releases": [dict(mechanism="dp_prefix_stable", experts=2600, agreement=0.9, **o)]}),)).fetchone()[0])
    check(st["fit"] == 1 and st["epsilon_total"] == rem["epsilon_spent"],
          "plan: the study's total is the ledger's after the real release", (st["epsilon_total"], rem))
    # a study that mixes units: the expert-level release does not fit an episode budget
    st = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps({
        "budget": {"epsilon": 3, "delta": 1e-5, "unit": "episode"},
        "releases": [{"label": "values", "n_states": 3, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1,
                      "delta": 1e-6, "episodes": 1000, "visits": [1000, 800, 600]},
                     dict(label="prefixes", mechanism="dp_prefix_stable", experts=240, agreement=0.9, **o22)]}),)
    ).fetchone()[0])
    r = st["releases"][1]
    check(st["releases"][0]["fits"] is True and r["fits"] is False and st["fit"] == 1 and
          r["why"][0].startswith("its unit of privacy is one expert, and the budget protects one episode") and
          r["why"][1].startswith("threshold 12,022 above the 240 experts"),
          "plan: a study of episodes: the expert-level release does not fit, and could not answer", r)
    for bad, msg in (
            (dict(experts=240, agreement=[0.5, 0.6]), "dp_plan: option agreement must not increase with the "
             "prefix's length (a prefix's count is at most that of its own prefixes), got 0.6 at length 2 after 0.5"),
            (dict(experts=240, agreement=1.5), "dp_plan: option agreement must be in [0, 1], got 1.5"),
            (dict(experts=0, agreement=0.5), "dp_plan: option experts must be >= 1, got 0"),
            (dict(experts=240), "dp_plan: option agreement is required: the hypothetical share of the experts' "
             "probability a prefix gets (count / experts), a number in [0, 1] or one per prefix length"),
            (dict(experts=240, agreement=0.5, seed=1), 'dp_plan: unknown option "seed" (known: mechanism, epsilon, '
             'delta, p_min, T, L, accountant, experts, agreement, length)')):
        check_error(con, "SELECT dp_plan(?)", msg, f"plan: refused: {msg[9:60]}",
                    (json.dumps(dict(mechanism="dp_prefix_stable", **o22, **bad)),))
    con.close()

run([test_policy_errors_name_caller_ids, test_cliff, test_no_caller_ids, test_whole_trajectories_and_T, test_T_above_n_and_none,
     test_long_tail_changes_nothing, test_tiny_epsilon, test_accountant, test_errors,
     test_unexamined_not_read, test_sampling_uniform, test_one_pass_uniform,
     test_count_hides_n, test_draw_uniform,
     test_one_pass_is_default_unseeded, test_only_the_callers_rows, test_read_paths_agree, test_plan])
