"""dp_mdp's outcome argument (ALGORITHMS.md §13.1, §13.5, §14.1): how each
episode ended, 'terminal' or 'censored', read from its last row.

- The layout: with every outcome 'terminal', a seeded release's parts are
  the bytes of the six-argument release with the same seed (the censored
  ends are drawn last), plus `outcome` and `censored`.
- The exact statistics (diagnostic) against a count written here: a
  censored episode's end in censored[s][a], a truncated episode's in
  neither, only the last row's outcome counting; dense and sparse.
- Errors: an outcome that is neither word names the row; option ends on a
  model with per-episode outcomes.
- The estimate: dp_mdp_value on seeded releases (dense, sparse
  pessimistic and renormalise) against the §14.1 formulas written here.
- The bias it removes: a one-state process cut by a study window, whose
  value is known in closed form, is estimated within five standard
  errors of the truth with the outcome, and read as ended without it is
  off by more than twenty."""
import json
import math
import os
import random
import sqlite3

from harness import check, check_close, check_error, connect, run
from reference import solve

S, A = 3, 2
BASE = {"n_states": S, "n_actions": A, "gamma": 0.9, "rmin": -1, "rmax": 1, "epsilon": 2,
        "delta": 1e-5, "horizon": 4, "clip": "none"}
MDP6 = "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps"
MDP7 = "SELECT dp_mdp(episode, t, state, action, reward, outcome, ?) FROM steps"


def log(n, seed):
    """Episodes of 1..6 steps over S states, each 'terminal' or 'censored'
    (on its last row; the earlier rows say the opposite, which must not
    count)."""
    rnd = random.Random(seed)
    rows = []
    for e in range(n):
        length, cens = rnd.randint(1, 6), rnd.random() < 0.4
        for t in range(length):
            last = t == length - 1
            word = "censored" if cens == last else "terminal"
            rows.append((e, t, rnd.randrange(S), rnd.randrange(A), rnd.uniform(-1, 1), word))
    return rows


def table(con, rows):
    con.execute("CREATE TABLE steps(episode, t, state, action, reward, outcome)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)", rows)


def release(con, sql, o):
    return json.loads(con.execute(sql, (json.dumps(o),)).fetchone()[0])


def exact(rows, H):
    """counts[s][a][S+1], censored[s][a], totals, cells {(s, a, s'): n}."""
    eps = {}
    for e, t, s, a, r, w in rows:
        eps.setdefault(e, []).append((t, s, a, w))
    counts = [[[0] * (S + 1) for _ in range(A)] for _ in range(S)]
    cens = [[0] * A for _ in range(S)]
    totals = [[0] * A for _ in range(S)]
    cells = {}
    for steps in eps.values():
        steps.sort()
        n = len(steps)
        for i in range(min(n, H)):
            _, s, a, _ = steps[i]
            totals[s][a] += 1
            if i + 1 < n:
                k = steps[i + 1][1]
                counts[s][a][k] += 1
                cells[(s, a, k)] = cells.get((s, a, k), 0) + 1
            elif steps[-1][3] == "censored":
                cens[s][a] += 1
            else:
                counts[s][a][S] += 1
    return counts, cens, totals, cells


def test_layout():
    con = connect()
    rows = log(300, 1)
    table(con, [r[:5] + ("terminal",) for r in rows])
    for extra, parts in (({}, ("start", "counts", "reward_sums")),
                         ({"transitions": "sparse"}, ("start", "totals", "ends", "reward_sums"))):
        o = dict(BASE, seed=5, **extra)
        six, seven = release(con, MDP6, o), release(con, MDP7, o)
        kind = extra.get("transitions", "dense")
        check(all(six[p] == seven[p] for p in parts),
              f"{kind}: every outcome terminal, the same seed: the six-argument release's parts")
        check(set(seven) - set(six) == {"outcome", "censored"} and seven["outcome"] == "per episode"
              and len(seven["censored"]) == S and all(len(x) == A for x in seven["censored"]),
              f"{kind}: plus outcome \"per episode\" and censored (S x A)", sorted(set(seven) - set(six)))
        check(all(seven[k] == six[k] for k in ("sigma", "sensitivity", "rho", "grid")) and
              seven.get("threshold") == six.get("threshold"),
              f"{kind}: the same calibration (sigma, sensitivity, rho, grid, threshold)")


def test_exact():
    con = connect()
    rows = log(400, 2)
    table(con, rows)
    counts, cens, totals, cells = exact(rows, BASE["horizon"])
    d = release(con, MDP7, dict(BASE, release="diagnostic"))
    check(d["exact_counts"] == counts and d["exact_censored"] == cens,
          "dense diagnostic: exact_counts and exact_censored as counted here (last row's outcome, "
          "truncated episodes in neither)")
    check(sum(map(sum, cens)) > 50 and sum(c[S] for row in counts for c in row) > 50,
          "the log has both kinds of end", (sum(map(sum, cens))))
    d = release(con, MDP7, dict(BASE, release="diagnostic", transitions="sparse"))
    ends = [[counts[s][a][S] for a in range(A)] for s in range(S)]
    check(d["exact_totals"] == totals and d["exact_ends"] == ends and d["exact_censored"] == cens
          and {(s, a, k): n for s, a, k, n in d["exact_next"]} == cells,
          "sparse diagnostic: exact_totals, exact_ends, exact_censored and exact_next as counted here")


def test_errors():
    con = connect()
    table(con, [(1, 0, 0, 0, 0.5, "terminal"), (1, 1, 1, 1, 0.0, "died")])
    o = json.dumps(dict(BASE))
    for value, got in (("'died'", "text 'died'"), ("NULL", "NULL"), ("1", "1")):
        check_error(con, f"SELECT dp_mdp(episode, t, state, action, reward, {value}, ?) FROM steps",
                    "dp_mdp: outcome must be 'terminal' (the episode ended: discharge, death) or "
                    "'censored' (the episode went on after this step, its next state not recorded), "
                    f"got {got}; only each episode's last row counts, e.g. COALESCE(outcome, "
                    "'terminal') (row with episode 1, t 0)", f"outcome {value}", (o,))
    check_error(con, MDP7, "dp_mdp: outcome must be 'terminal' (the episode ended: discharge, death) "
                "or 'censored' (the episode went on after this step, its next state not recorded), "
                "got text 'died'; only each episode's last row counts, e.g. COALESCE(outcome, "
                "'terminal') (row with episode 1, t 1)", "an outcome of another word", (o,))
    con.execute("UPDATE steps SET outcome = 'censored'")
    m = con.execute(MDP7, (o,)).fetchone()[0]
    check_error(con, "SELECT dp_mdp_value(?, '[0, 0, 0]', '{\"ends\": \"censored\"}')",
                "dp_mdp_value: option ends does not apply: this model says how each episode ended "
                "(dp_mdp's outcome argument), its censored ends counted apart",
                "option ends on a model with outcomes", (m,))


def estimate(m, renormalise=False):
    """§14.1 with per-episode outcomes (count_floor 0, min_count 0): per
    pair N visits, E ended, C went on unseen, P(s') = c(s') / N_o times
    (N - E) / N, the unknown share (sparse, pessimistic) (N - E)/N (1 - K/N_o)."""
    pos = lambda x: x if x > 0 else 0.0
    P = [[{} for _ in range(A)] for _ in range(S)]
    r = [[0.0] * A for _ in range(S)]
    u = [[0.0] * A for _ in range(S)]
    pess = 0
    sparse = m.get("transitions") == "sparse"
    cells = {}
    for s, a, k, c in m.get("next", []):
        cells.setdefault((s, a), []).append((k, c))
    for s in range(S):
        for a in range(A):
            C = pos(m["censored"][s][a])
            if sparse:
                kept = [(k, c) for k, c in cells.get((s, a), []) if c > 0]
                K, E = sum(c for _, c in kept), pos(m["ends"][s][a])
                N = max(pos(m["totals"][s][a]), K + E + C)
                on = N - E
                seen = K if N == K + E + C else max(on - C, K)
                if on <= 0:
                    norm, share = 1.0, 0.0
                elif renormalise:
                    norm, share = (K * N / on if K > 0 else 1.0 if E > 0 else 0.0), 0.0
                elif seen > 0:
                    norm, share = seen * N / on, on / N * (1 - K / seen)
                else:
                    norm, share = 1.0, on / N
                if not (N > 0) or not (norm > 0):
                    pess += 1
                    r[s][a] = m["rmin"]
                    continue
            else:
                kept = [(k, c) for k, c in enumerate(m["counts"][s][a][:S]) if c > 0]
                K, E = sum(c for _, c in kept), pos(m["counts"][s][a][S])
                N = K + E + C
                if not (N > 0) or (C > 0 and not (K > 0) and not (E > 0)):
                    pess += 1
                    r[s][a] = m["rmin"]
                    continue
                norm, share = (K * N / (K + C) if K > 0 else 1.0), 0.0
            for k, c in kept:
                P[s][a][k] = c / norm
            u[s][a] = share
            r[s][a] = min(max(m["reward_center"] + m["reward_sums"][s][a] / N, m["rmin"]), m["rmax"])
    st = [pos(x) for x in m["start"]]
    start = [x / sum(st) for x in st]
    return P, r, u, start, pess


def value(m, pi, renormalise=False):
    P, r, u, start, pess = estimate(m, renormalise)
    g = m["gamma"]
    M = [[(1.0 if i == j else 0.0) - g * P[i][pi[i]].get(j, 0.0) for j in range(S)] for i in range(S)]
    V = solve(M, [r[s][pi[s]] + g * u[s][pi[s]] * m["rmin"] for s in range(S)])
    return sum(p * v for p, v in zip(start, V)), pess


def test_estimate():
    con = connect()
    table(con, log(3000, 3))
    pi = [0, 1, 1]
    for extra, opt, ren in (({}, {}, False),
                            ({"transitions": "sparse", "epsilon": 6}, {}, False),
                            ({"transitions": "sparse", "epsilon": 6}, {"unknown": "renormalise"}, True)):
        m = release(con, MDP7, dict(BASE, seed=7, **extra))
        o = dict(opt, bootstrap=0, min_count=0)
        got = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                     (json.dumps(m), json.dumps(pi), json.dumps(o))).fetchone()[0])
        want, pess = value(m, pi, ren)
        name = f"dp_mdp_value on a {extra.get('transitions', 'dense')} release {opt or ''}"
        check_close(got["value"], want, name + ": the §14.1 estimate written here", 1e-10, 1e-10)
        check(got["ends"] == "per episode" and got["pessimistic_pairs"] == pess,
              name + ": ends \"per episode\", the pessimistic pairs", (got["ends"], got["pessimistic_pairs"], pess))


def test_window_bias():
    """One state, one action: each step ends the stay with probability q
    (reward 1 on that step, else 0); a study window records W steps.  The
    value is q / (1 - gamma (1 - q))."""
    q, W, n, g = 0.2, 3, 20000, 0.9
    rnd = random.Random(9)
    rows = []
    for e in range(n):
        for t in range(W):
            end = rnd.random() < q
            last = end or t == W - 1
            rows.append((e, t, 0, 0, 1.0 if end else 0.0, "terminal" if end else "censored"))
            if last:
                break
    con = connect()
    table(con, rows)
    truth = q / (1 - g * (1 - q))
    visits = len(rows)
    # the estimate is a smooth function of q_hat = ends / visits: its
    # standard error is |dV/dq| sqrt(q (1 - q) / visits)
    se = (1 - g) / (1 - g * (1 - q)) ** 2 * math.sqrt(q * (1 - q) / visits)
    o = {"n_states": 1, "n_actions": 1, "gamma": g, "rmin": 0, "rmax": 1, "epsilon": 1e3,
         "delta": 1e-5, "horizon": W, "seed": 1}
    for extra in ({}, {"transitions": "sparse", "epsilon": 50}):
        kind = extra.get("transitions", "dense")
        with_o = release(con, MDP7, dict(o, **extra))
        without = release(con, MDP6, dict(o, **extra))
        v1 = json.loads(con.execute("SELECT dp_mdp_value(?, '[0]', '{\"bootstrap\": 0}')",
                                    (json.dumps(with_o),)).fetchone()[0])["value"]
        v0 = json.loads(con.execute("SELECT dp_mdp_value(?, '[0]', '{\"bootstrap\": 0}')",
                                    (json.dumps(without),)).fetchone()[0])["value"]
        check(abs(v1 - truth) <= 5 * se, f"{kind}: with the outcome, within 5 se of the truth {truth:.4f}",
              (v1, truth, se))
        check(abs(v0 - truth) > 20 * se, f"{kind}: the window read as ends is off by more than 20 se",
              (v0, truth, se))


def test_end_only_pairs():
    """A pair whose episodes all end there (0 -> 1 -> end, every stay
    terminal): with the outcome it is read as without it, whatever noise
    the censored entry gets: no more pessimistic pairs, the same value
    within the noise (sparse renormalise and dense)."""
    con = connect()
    rows = [(e, t, t, 0, 1.0 if t == 1 else 0.0, "terminal") for e in range(2000) for t in range(2)]
    table(con, rows)
    o = {"n_states": 2, "n_actions": 1, "gamma": 0.9, "rmin": 0, "rmax": 1, "epsilon": 1,
         "delta": 1e-5, "horizon": 2}
    for extra, opt in (({"transitions": "sparse"}, {"unknown": "renormalise"}), ({"transitions": "dense"}, {})):
        p6 = p7 = 0
        v6, v7 = [], []
        for seed in range(20):
            vo = json.dumps(dict(opt, bootstrap=0))
            for sql, vs in ((MDP6, v6), (MDP7, v7)):
                m = con.execute(sql, (json.dumps(dict(o, seed=seed, **extra)),)).fetchone()[0]
                r = json.loads(con.execute("SELECT dp_mdp_value(?, '[0, 0]', ?)", (m, vo)).fetchone()[0])
                vs.append(r["value"])
                if sql is MDP6:
                    p6 += r["pessimistic_pairs"]
                else:
                    p7 += r["pessimistic_pairs"]
        kind = extra["transitions"]
        check(p7 == p6, f"{kind}: end-only pairs are not made pessimistic by the censored entry's noise",
              (p6, p7))
        check(max(abs(a - b) for a, b in zip(v6, v7)) < 0.05,
              f"{kind}: the values with and without the outcome agree (no stay censored)",
              list(zip(v6, v7))[:5])


def test_bootstrap_and_plan():
    """The bootstrap redraws the censored entries too (a pair keeping all S
    cells: the redraw's largest scratch), and dp_mdp_plan reads the model."""
    con = connect()
    table(con, log(2000, 6))
    for extra in ({"transitions": "sparse", "epsilon": 5}, {}):
        m = con.execute(MDP7, (json.dumps(dict(BASE, seed=2, **extra)),)).fetchone()[0]
        a = json.loads(con.execute("SELECT dp_mdp_value(?, '[0, 1, 1]', '{\"bootstrap\": 20}')", (m,)).fetchone()[0])
        b = json.loads(con.execute("SELECT dp_mdp_value(?, '[0, 1, 1]', '{\"bootstrap\": 20}')", (m,)).fetchone()[0])
        p = json.loads(con.execute("SELECT dp_mdp_plan(?)", (m,)).fetchone()[0])
        kind = extra.get("transitions", "dense")
        check(a == b and a["stderr"] > 0 and len(p["policy"]) == S and p["ends"] == "per episode",
              f"{kind}: the bootstrap runs and repeats, stderr > 0; dp_mdp_plan reads the outcome model")


def test_calibration_cap():
    """Where the horizon passes S A (S + 1), the bound is the same with the
    outcome, and sigma differs only by the grid rounding term (the guide's
    one-state example)."""
    con = connect()
    table(con, [(1, 0, 0, 0, 0.0, "censored")])
    for extra in ({}, {"transitions": "sparse"}, {"features": {"tent": 2, "low": 0, "high": 1}}):
        o = dict(n_states=2 if extra.get("features") else 1, n_actions=1, gamma=0.9, rmin=0, rmax=1,
                 epsilon=1, delta=1e-5, horizon=3, seed=1, **extra)
        a, b = release(con, MDP6, o), release(con, MDP7, o)
        # the bound is the same; only the grid-rounding term sqrt(touched_rep) g may
        # count the censored entries where two episodes can touch the whole vector
        check(abs(a["sigma"] - b["sigma"]) <= 1e-4 * a["sigma"] and a["rho"] > 0 and b["sigma"] >= a["sigma"],
              f"{extra or 'dense'}: H = 3 past the cap, sigma the same up to the grid rounding term",
              (a["sigma"], b["sigma"]))


def test_plan_outcome():
    """dp_plan's option outcome gives the release's calibration with the
    outcome argument (sigma, rho, threshold as the seven-argument release's
    on a log where the grid term differs: H past the cap), and one more noisy
    entry per row in the planned L1."""
    con = connect()
    table(con, [(1, 0, 0, 0, 0.0, "censored")])
    keys = ("sigma", "sensitivity", "rho", "threshold")
    for extra in ({"transitions": "dense"}, {"transitions": "sparse"}):
        o = dict(n_states=1, n_actions=1, gamma=0.9, rmin=0, rmax=1, epsilon=1, delta=1e-5,
                 horizon=3, clip="none", **extra)
        rel = release(con, MDP7, dict(o, seed=1))
        p = [json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(
            o, mechanism="dp_mdp", episodes=1000, outcome=w)),)).fetchone()[0]) for w in (False, True)]
        check(all(p[1].get(k) == rel.get(k) for k in keys) and p[1]["outcome"] == "per episode"
              and "outcome" not in p[0] and p[0]["sigma"] < p[1]["sigma"],
              f"{extra['transitions']}: dp_plan with outcome true has the seven-argument release's "
              "calibration (and false the six-argument one's)",
              {k: (p[1].get(k), rel.get(k)) for k in keys})
        if extra["transitions"] == "dense":
            # one pair, 3000 steps: L1 = sqrt(2/pi) sigma (rows + sqrt(rows)) / N + 2 M/(N + M)
            def l1(sig, rows, n=3000.0):
                m = sig / math.sqrt(2 * math.pi)
                return min(2, math.sqrt(2 / math.pi) * sig * (rows + math.sqrt(rows)) / n + 2 * m / (n + m))
            check_close(p[1]["transition_l1"], l1(p[1]["sigma"], 3),
                        "dense, outcome: the row's L1 counts the censored entry (S + 2 entries)")
            check_close(p[0]["transition_l1"], l1(p[0]["sigma"], 2),
                        "dense, no outcome: S + 1 entries")
    check_error(con, "SELECT dp_plan(?)", "dp_plan: option outcome must be true or false, got \"yes\"",
                "a non-boolean outcome names the option",
                (json.dumps(dict(BASE, mechanism="dp_mdp", episodes=10, outcome="yes")),))


def test_units_print():
    """The words on rows before an episode's last are not read, so copies of
    the episodes that differ only there are copies (the ledger's check), and
    a copy that differs in its last row's word is a new episode."""
    import tempfile
    d = tempfile.mkdtemp()
    con = connect(os.path.join(d, "p.db"))
    con.execute("PRAGMA journal_mode = WAL")
    table(con, log(50, 8))
    con.commit()
    con.execute("SELECT dprl_budget('b', 100, 1e-3, '{\"unit\": \"episode\"}')")
    o = json.dumps(dict(BASE, budget="b"))
    # group 1 repeats group 0's episodes (of two rows or more) under other
    # keys, with the word of each first row flipped
    bad = ("SELECT k, length(dp_mdp(episode * 10 + k, t, state, action, reward, CASE WHEN t = 0 AND k = 1 "
           "THEN (CASE outcome WHEN 'terminal' THEN 'censored' ELSE 'terminal' END) ELSE outcome END, ?)) "
           "FROM steps, (SELECT 0 AS k UNION ALL SELECT 1) WHERE episode IN (SELECT episode FROM steps "
           "GROUP BY episode HAVING count(*) > 1) GROUP BY k")
    err = None
    try:
        con.execute(bad, (o,)).fetchall()
    except sqlite3.Error as e:
        err = str(e)
    check(err is not None and "those of an episode of an earlier group under another key" in err,
          "copies differing only in the words of rows before the last are refused as copies", err)


run([test_layout, test_exact, test_errors, test_estimate, test_window_bias, test_end_only_pairs,
     test_bootstrap_and_plan, test_calibration_cap, test_plan_outcome, test_units_print])
