"""make utility: how far private values are from the exact ones.

Prints, on the ICU sample (samples/clinic.sql) and on the chain of Balle et
al. section 6, the RMSE of the released values against the exact
(non-private) estimate for both perturbations ("output", the paper's
mechanism; "statistics", ALGORITHMS.md section 9), both features forms and
epsilon in {0.1, 0.5, 1, 2}, 20 seeded releases each; and, for
dp_prefix_stable at the paper's setting, the released prefix lengths under
both accountants; the charges the ledger takes for a study (a GROUP BY
over six hospitals, ten statistics releases); off-policy: the greedy policy
planned on one dp_mdp release of the paper's Q-learning task (with
dp_q_learn beside it) and the clinical sample's rules valued on one
release; expert level: the exact value of dp_expert_policy's consensus on
the clinical sample's clinicians' logs.  Seeded, so the numbers are
reproducible (a seeded release is NOT private: the seeds are here only to
make the table stable).

usage: DPRL_SO=./dprl.so python3 tests/utility/utility.py [--quick] [part ...]
  parts: icu chain prefix study offpolicy expert icu_model (default: all)
"""
import json
import math
import os
import random
import re
import sqlite3
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.path.abspath(os.environ.get("DPRL_SO", os.path.join(ROOT, "dprl.so")))
QUICK = "--quick" in sys.argv
SEEDS = 5 if QUICK else 20
EPSILONS = (0.1, 0.5, 1, 2)


def connect():
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(SO)
    con.enable_load_extension(False)
    return con


def rmse(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)) / len(a))


def releases(con, fn, table, base, variants):
    """One scan of `table` computing every variant (a dict of options) as a
    separate aggregate; returns the parsed results in order."""
    cols = ", ".join(f"{fn}(episode, t, state, reward, ?)" for _ in variants)
    params = [json.dumps(dict(base, **v)) for v in variants]
    row = con.execute(f"SELECT {cols} FROM {table}", params).fetchone()
    return [json.loads(r) for r in row]


def table_rows(title, header, rows):
    print(f"\n{title}")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def policy_eval_grid(con, table, base, features_forms, exact_ref=None):
    """RMSE of the released values against the exact estimate (or against
    exact_ref, e.g. the true V), per (fn, features, perturbation, eps)."""
    out = []
    for fn in ("dp_lsw",):
        for fname, feat in features_forms:
            fb = dict(base, features=feat)
            diag = releases(con, fn, table, fb, [dict(release="diagnostic", seed=1)])[0]
            exact = exact_ref or exact_values(diag, feat, fb["n_states"])
            for eps in EPSILONS:
                cells = [fname, f"{eps:g}"]
                for perturb in ("output", "statistics"):
                    vs = [dict(epsilon=eps, perturb=perturb, seed=s) for s in range(1, SEEDS + 1)]
                    res = releases(con, fn, table, fb, vs)
                    errs = [rmse(r["values"], exact) for r in res]
                    cells.append(f"{sum(errs) / len(errs):.3g}")
                out.append(cells)
    return out


def exact_values(diag, feat, n):
    """Phi theta_exact, by the definition of the features forms."""
    th = diag["theta_exact"]
    if feat == "tabular":
        return th
    k = feat["aggregate"]
    return [th[s // k] for s in range(n)]


def icu():
    con = connect()
    with open(os.path.join(ROOT, "samples", "clinic.sql")) as f:
        con.executescript(f.read())
    base = dict(n_states=10, rmin=0, rmax=1, gamma=0.9, fmax=9, delta=1e-5, epsilon=1)
    t0 = time.time()
    rows = policy_eval_grid(con, "steps", base, [("tabular", "tabular"), ("aggregate 2", {"aggregate": 2})])
    table_rows(f"ICU sample (20,000 patients, N = 10, fmax = 9, delta = 1e-5): dp_lsw, mean RMSE of "
               f"{SEEDS} releases against the exact estimate ({time.time() - t0:.1f} s)",
               ["features", "epsilon", "output (paper)", "statistics"], rows)


# ---- the chain of Balle et al. section 6 -----------------------------------

N_CHAIN, P_STAY, GAMMA_CHAIN = 40, 0.5, 0.99


def chain_values():
    """V(s) by the Bellman equation: V(N-1) = p g V(N-1) + (1-p) 1 (the
    absorbing end pays 1), V(s) = p g V(s) + (1-p) g V(s+1)."""
    g, p = GAMMA_CHAIN, P_STAY
    V = [0.0] * N_CHAIN
    V[-1] = (1 - p) / (1 - p * g)
    for s in range(N_CHAIN - 2, -1, -1):
        V[s] = (1 - p) * g * V[s + 1] / (1 - p * g)
    return V


def chain_table(con, m, seed):
    rng = random.Random(seed)
    rows = []
    for e in range(m):
        s, t = rng.randrange(N_CHAIN), 0
        while True:
            if rng.random() < P_STAY:
                rows.append((e, t, s, 0.0))
            elif s == N_CHAIN - 1:
                rows.append((e, t, s, 1.0))
                break
            else:
                rows.append((e, t, s, 0.0))
                s += 1
            t += 1
    con.execute("DROP TABLE IF EXISTS chain")
    con.execute("CREATE TABLE chain(episode INTEGER, t INTEGER, state INTEGER, reward REAL)")
    con.executemany("INSERT INTO chain VALUES (?, ?, ?, ?)", rows)


def chain():
    con = connect()
    V = chain_values()
    zero = rmse([0.0] * N_CHAIN, V)
    rows = []
    sizes = (100, 1000, 10000) if QUICK else (100, 1000, 10000, 100000)
    for m in sizes:
        chain_table(con, m, 7 + m)
        base = dict(n_states=N_CHAIN, rmin=0, rmax=1, gamma=GAMMA_CHAIN, fmax=1, epsilon=0.1, delta=0.1,
                    features="tabular")
        cells = [str(m)]
        for perturb in ("output", "statistics"):
            res = releases(con, "dp_lsw", "chain", base,
                           [dict(perturb=perturb, seed=s) for s in range(1, SEEDS + 1)])
            cells.append(f"{sum(rmse(r['values'], V) for r in res) / len(res):.3g}")
        cells.append(f"{zero:.3g}")
        rows.append(cells)
    table_rows(f"The chain (N = 40, gamma = 0.99, fmax = 1, epsilon = 0.1, delta = 0.1, tabular): "
               f"mean RMSE of {SEEDS} releases against the true V",
               ["episodes", "output (paper)", "statistics", "V = 0"], rows)


# ---- dp_prefix_stable at the paper's setting ---------------------------------

def prefix():
    """3,000 experts, 10 states, 2 actions; every expert takes the states'
    common action with probability 0.94 (the rest 0.06 >= p_min = 0.02);
    one 200-step trajectory per expert, next state uniform.  epsilon =
    7.5, delta = 0.9/3000, T = 100, L = 200."""
    con = connect()
    rng = random.Random(11)
    S, A, M, L = 10, 2, 3000, 200
    best = [rng.randrange(A) for _ in range(S)]
    con.execute("CREATE TABLE policies(expert INTEGER, state INTEGER, action INTEGER, prob REAL)")
    con.executemany("INSERT INTO policies VALUES (?, ?, ?, ?)",
                    [(i, s, a, 0.94 if a == best[s] else 0.06)
                     for i in range(M) for s in range(S) for a in range(A)])
    steps = []
    for i in range(M):
        s = rng.randrange(S)
        for t in range(L):
            a = best[s] if rng.random() < 0.94 else 1 - best[s]
            steps.append((i, t, s, a))
            s = rng.randrange(S)
    con.execute("CREATE TABLE steps(episode INTEGER, t INTEGER, state INTEGER, action INTEGER)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?)", steps)
    rows = []
    for acc in ("optimal", "paper"):
        o = dict(epsilon=7.5, delta=0.9 / M, p_min=0.02, T=100, L=L, accountant=acc)
        cal = json.loads(con.execute("SELECT dp_prefix_calibrate(?)", (json.dumps(o),)).fetchone()[0])
        lengths = []
        for seed in range(1, SEEDS + 1):
            got = dict(con.execute(
                "SELECT release, max(step) FROM dp_prefix_stable('SELECT episode, t, state, action "
                "FROM steps', 'SELECT expert, state, action, prob FROM policies', ?) GROUP BY release",
                (json.dumps(dict(o, seed=seed)),)).fetchall())
            lengths += list(got.values()) + [0] * (100 - len(got))
        released = [k for k in lengths if k > 0]
        rows.append([acc, f"{cal['eps_prime']:.4f}", f"{cal['threshold']:.0f}",
                     f"{len(released) / len(lengths):.2f}",
                     f"{sum(released) / len(released):.1f}" if released else "-",
                     f"{max(lengths)}"])
    # the prefix length at which 3000 * 0.94^k falls below the threshold
    table_rows(f"dp_prefix_stable at the paper's setting (3,000 experts agreeing with probability "
               f"0.94, epsilon 7.5, delta 0.9/3000, T 100, L 200; {SEEDS} seeded runs)",
               ["accountant", "eps'", "threshold", "share of examined released",
                "mean released length", "longest"], rows)


# ---- a study's charges (ALGORITHMS.md section 12) ------------------------


def gdp_eps(mu, delta):
    """The epsilon of mu-GDP at delta (Balle & Wang's exact delta(eps)),
    by bisection: for comparison only (GDP is not the ledger's rule)."""
    phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))
    d = lambda e: phi(-e / mu + mu / 2) - math.exp(e) * phi(-e / mu - mu / 2)
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if d(mid) <= delta else (mid, hi)
    return hi


def study():
    """The issue's clinical study: the charges the ledger takes."""
    con = connect()
    with open(os.path.join(ROOT, "samples", "clinic.sql")) as f:
        con.executescript(f.read())
    con.isolation_level = None
    base = dict(n_states=10, rmin=0, rmax=1, gamma=0.9, fmax=9, epsilon=1, delta=1e-6,
                perturb="statistics")
    rows = []
    for acc in ("basic", "zcdp"):
        name = f"hospitals-{acc}"
        con.execute("SELECT dprl_budget(?, 3, 1e-5, ?)",
                    (name, json.dumps({"unit": "episode", "accountant": acc, "in_memory": True})))
        got = con.execute("SELECT expert % 6 AS hospital, dp_lsw(episode, t, state, reward, ?) "
                          "FROM steps GROUP BY hospital", (json.dumps(dict(base, budget=name)),)).fetchall()
        rem = json.loads(con.execute("SELECT dprl_budget_remaining(?)", (name,)).fetchone()[0])
        rows.append([f"six hospitals, one GROUP BY, epsilon 1 each ({acc})", str(len(got)),
                     str(rem["releases"]), f"{rem['epsilon_spent']:.3f}", "1"])
    con.execute("CREATE TABLE small AS SELECT * FROM steps WHERE episode <= 200")
    for acc in ("basic", "zcdp"):
        name = f"ten-{acc}"
        con.execute("SELECT dprl_budget(?, 100, 1e-5, ?)",
                    (name, json.dumps({"unit": "episode", "accountant": acc, "in_memory": True})))
        for _ in range(10):
            con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM small",
                        (json.dumps(dict(base, budget=name)),)).fetchall()
        rem = json.loads(con.execute("SELECT dprl_budget_remaining(?)", (name,)).fetchone()[0])
        rows.append([f"ten statistics releases at (1, 1e-6) ({acc})", "10", str(rem["releases"]),
                     f"{rem['epsilon_spent']:.3f}", "<= 3.5" if acc == "zcdp" else "10 (the sum)"])
    plan = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(base, episodes=1000,
                                                                        visits=[1000] * 10)),)).fetchone()[0])
    sigma1 = 1 / math.sqrt(2 * plan["rho"])
    rows.append(["(for comparison: the same ten in Gaussian DP)", "10", "-",
                 f"{gdp_eps(math.sqrt(10) / sigma1, 1e-5):.3f}", "-"])
    table_rows("A study's charges (ledger totals at delta 1e-5; the ledger's own numbers)",
               ["releases", "values returned", "ledger rows", "epsilon charged", "target"], rows)
    # the four questions of the clinical study, planned against epsilon 3 before spending
    pe = dict(base, episodes=50000, visits=[30000, 37000, 45000, 47000, 40000, 35000, 24000,
                                            16000, 10000, 2000])
    hosp = dict(pe, groups=6, episodes=8000, visits=[v // 6 for v in pe["visits"]])
    study = {"budget": {"epsilon": 3, "delta": 1e-5, "unit": "episode"}, "releases": [
        dict(pe, label="values per severity"), dict(hosp, label="the same per hospital"),
        {"label": "stable prefixes", "mechanism": "dp_prefix_stable", "epsilon": 1, "delta": 1e-6,
         "p_min": 0.02, "T": 100, "L": 25, "experts": 240, "agreement": 0.9},
        {"label": "a Q-function", "mechanism": "dp_q_learn", "n_actions": 2, "gamma": 0.9,
         "rmin": 0, "rmax": 1, "lr": 3e-4, "T": 5000, "B": 64, "k": 60, "epsilon": 1,
         "delta": 1e-5}]}
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(study),)).fetchone()[0])
    print(f"\nThe four-question study planned against epsilon 3 (dp_plan): {p['summary']}")
    for r in p["releases"]:
        print(f"- {r['label']}: fits {r['fits']}, useful {r['useful']}, total after "
              f"{r['epsilon_total']:.3f}" + "".join(f"\n    {w}" for w in r["why"]))


# ---- off-policy: the patient-level model (ALGORITHMS.md sections 13-14) ----

K_TENT = 6


def paper_step(s, a, rng):
    u = 0.25 * rng.random()
    s2 = min(1.0, s + u) if a == 1 else max(0.0, s - u)
    return s2, 0.5 - abs(s2 - 0.5)


def paper_tent(s):
    x = s * (K_TENT - 1)
    k = min(int(x), K_TENT - 2)
    w = [0.0] * K_TENT
    w[k], w[k + 1] = 1 - (x - k), x - k
    return w


def paper_return(q, rng, n=400):
    """The greedy policy of q (over the tent anchors) in the true task."""
    tot = 0.0
    for _ in range(n):
        s = rng.random()
        for _ in range(50):
            w = paper_tent(s)
            a = max(range(2), key=lambda a: sum(w[k] * q[k][a] for k in range(K_TENT)))
            s, r = paper_step(s, a, rng)
            tot += r
    return tot / n


def paper_log(n):
    rng = random.Random(n)
    log = []
    for e in range(n):
        s = rng.random()
        for t in range(50):
            a = rng.randrange(2)
            s2, r = paper_step(s, a, rng)
            log.append((e, t, s, a, r, s2))
            s = s2
    return log


def grid_return(con, m, rng, n=400):
    """The greedy policy of a dp_q_learn release, read on 201 states."""
    grid = []
    for i in range(201):
        q0, q1 = con.execute("SELECT dp_q_value(?1, ?2, 0), dp_q_value(?1, ?2, 1)",
                             (m, i / 200)).fetchone()
        grid.append(1 if q1 > q0 else 0)
    tot = 0.0
    for _ in range(n):
        s = rng.random()
        for _ in range(50):
            s, r = paper_step(s, grid[round(s * 200)], rng)
            tot += r
    return tot / n


def clinical(patients, clinicians):
    """The clinical sample's database: simulator, log and rules."""
    con = connect()
    con.execute(f"CREATE TEMP TABLE clinical_config AS SELECT {patients} AS patients, "
                f"{clinicians} AS clinicians, 1 AS seed, 30 AS max_steps")
    for f in ("model.sql", "log.sql", "rules.sql"):
        with open(os.path.join(ROOT, "samples", "clinical", f)) as fh:
            con.executescript(fh.read())
    return con


def offpolicy():
    """The paper's Q-learning task (random logging policy, 50 steps): the
    greedy policy planned on one dp_mdp release at epsilon 1, with the log's
    cut read as censoring and as ending; dp_q_learn on the same log; and the
    value of the clinical sample's new rule on one release (20,000
    patients)."""
    con = connect()
    rows = []
    for n in (1000, 3000):
        con.execute("DROP TABLE IF EXISTS task")
        con.execute("CREATE TABLE task(episode, t, state, action, reward, s_next)")
        con.executemany("INSERT INTO task VALUES (?, ?, ?, ?, ?, ?)", paper_log(n))
        for ends in ("censored", "terminal"):
            rets = []
            for seed in range(1, SEEDS + 1):
                o = {"n_states": K_TENT, "n_actions": 2, "gamma": 0.98, "rmin": 0, "rmax": 0.5,
                     "horizon": 50, "features": {"tent": K_TENT, "low": 0, "high": 1},
                     "epsilon": 1, "delta": 1e-5, "seed": seed}
                m = con.execute("SELECT dp_mdp(episode, t, state, action, reward, ?) FROM task",
                                (json.dumps(o),)).fetchone()[0]
                sigma = json.loads(m)["sigma"]
                p = json.loads(con.execute("SELECT dp_mdp_plan(?, ?)", (m, json.dumps(
                    {"ends": ends}))).fetchone()[0])
                rets.append(paper_return(p["q"], random.Random(seed)))
            rows.append([f"{n}", "dp_mdp, episode", f'ends "{ends}"', f"{sigma:.0f}",
                         f"{sum(rets) / len(rets):.2f}", f"{min(rets):.2f}",
                         f"{sum(r > 10.9 for r in rets)}/{SEEDS}",
                         (">= 18" if n == 1000 else ">= 20.0") if ends == "censored" else ""])
        if n == 1000:
            rets = []
            for seed in range(1, SEEDS + 1):
                o = {"n_actions": 2, "gamma": 0.9, "rmin": 0, "rmax": 0.5, "lr": 3e-4,
                     "T": 50 * n, "B": 64, "K": 21, "k": 200, "epsilon": 1, "delta": 1e-5,
                     "seed": seed}
                m = con.execute("SELECT dp_q_learn(state, action, reward, s_next, ?) FROM task",
                                (json.dumps(o),)).fetchone()[0]
                rets.append(grid_return(con, m, random.Random(seed)))
            rows.append([f"{n}", "dp_q_learn, reward function", "paper's settings",
                         f"{json.loads(m)['paths']['sigma']:.3f}",
                         f"{sum(rets) / len(rets):.2f}", f"{min(rets):.2f}",
                         f"{sum(r > 10.9 for r in rets)}/{SEEDS}", ""])
    table_rows(f"The paper's Q-learning task at epsilon 1, delta 1e-5: the greedy policy played "
               f"in the true task (400 episodes), {SEEDS} seeded releases (random policy 10.9, "
               f"optimal 20.70). dp_mdp: tent K = 6, horizon 50, dp_mdp_plan with gamma 0.98; "
               f"every episode is cut at 50 steps, so its end is censoring",
               ["episodes", "release, unit", "planning", "sigma", "mean return", "worst",
                "beat random", "target"], rows)
    sys.path.insert(0, os.path.join(ROOT, "samples", "clinical"))
    import exact  # the sample's dynamic programming on its true model
    con = clinical(20000, 30)
    truth = exact.all_values(con)
    rules = ["new_rule", "majority", "standard_care"]
    pols = {r: exact.rule(con, r) for r in rules}
    rows = []
    # dp_plan's value verdict, given the log's visits per pair as the public figure
    cv = [[0.0, 0.0] for _ in range(10)]
    for s_, a_, n_ in con.execute("SELECT state, action, count(*) FROM steps WHERE t < 30 GROUP BY 1, 2"):
        cv[s_][a_] = float(n_)
    # ("auto", None): the defaults (the automatic clip, the floor 3 sigma it brings)
    for clip, floor in (("none", 0), (4, 0), (8, 3), (4, 3), ("auto", None)):
        po = {"mechanism": "dp_mdp", "n_states": 10, "n_actions": 2, "gamma": 1, "rmin": -1, "rmax": 1,
              "horizon": 30, "epsilon": 1, "delta": 1e-5, "episodes": 20000, "visits": cv, "value_range": 2}
        if clip != "auto":
            po["clip"] = clip
        pl = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(po),)).fetchone()[0])
        err = {r: [] for r in rules}
        for seed in range(1, SEEDS + 1):
            o = {"n_states": 10, "n_actions": 2, "gamma": 1, "rmin": -1, "rmax": 1, "horizon": 30,
                 "epsilon": 1, "delta": 1e-5, "seed": seed}
            if clip != "auto":
                o["clip"] = clip
            m = con.execute("SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps",
                            (json.dumps(o),)).fetchone()[0]
            vo = {"horizon": 30, "bootstrap": 0}
            if floor is not None:
                vo["count_floor"] = floor * json.loads(m)["sigma"]
            res = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                         (m, json.dumps(pols), json.dumps(vo))).fetchone()[0])
            for r in rules:
                err[r].append(res["policies"][r]["value"] - truth[r])
        rows.append([f"{clip} (default)" if clip == "auto" else f"{clip}",
                     "3 sigma (default)" if floor is None else f"{floor} sigma"] +
                    [f"{math.sqrt(sum(x * x for x in err[r]) / SEEDS):.3f} "
                     f"({sum(err[r]) / SEEDS:+.3f})" for r in rules] +
                    [f"{pl['useful']} ({pl['value_rmse']:.3f})"])
    table_rows(f"dp_mdp + dp_mdp_value on the clinical sample (20,000 patients, epsilon 1, "
               f"delta 1e-5, horizon 30): RMSE (bias) against the exact value, {SEEDS} seeded "
               f"releases; without a clip, sigma follows the 30-step horizon; without a floor, the "
               f"clipped negative counts spread the transitions (ALGORITHMS.md 14.5) "
               f"(exact: new rule {truth['new_rule']:.3f}, majority {truth['majority']:.3f}; "
               f"target <= 0.05); dp_plan: its verdict and value_rmse given the log's visits per pair and "
               f"value_range 2 (it does not count the floor)",
               ["clip", "count_floor"] + rules + ["dp_plan useful (value_rmse)"], rows)


# ---- a model release at clinical scale (samples/icu_model, issue 33) ---------

ICU_STAYS = 20000
ICU_RELEASE = {"n_states": 1440, "n_actions": 8, "gamma": 1, "rmin": -1, "rmax": 1, "delta": 1e-5,
               "horizon": 20, "clip": "none"}


# dp_mdp's outcome argument for the ICU log: a stay of 20 rows whose last
# reward is 0 was cut by the window (it went on, its next state unseen)
ICU_OUTCOME = "CASE WHEN t = 19 AND reward = 0 THEN 'censored' ELSE 'terminal' END"


def noise_free_release(sim, log, outcomes=False, groups=None):
    """The JSON text of a dp_mdp result holding the log's exact counts
    (sigma 0): what dp_mdp adds noise to, read by dp_mdp_value as any
    release (the counts of the first 20 steps: every step here); with
    outcomes, a cut stay's end counted in censored, as dp_mdp's outcome
    argument ICU_OUTCOME counts it; with groups (a map from each state to a
    group), the counts of the groups."""
    m = groups or list(range(sim.N_STATES))
    S, A = max(m) + 1, sim.N_ACTIONS
    counts = [dict() for _ in range(S * A)]
    rsum, start, cens = [0.0] * (S * A), [0] * S, [[0] * A for _ in range(S)]
    for i, (e, t, s, a, r) in enumerate(log):
        j = m[s] * A + a
        if i == 0 or log[i - 1][0] != e:
            start[m[s]] += 1
        s2 = m[log[i + 1][2]] if i + 1 < len(log) and log[i + 1][0] == e else S  # S: ended
        if s2 == S and outcomes and t == sim.HORIZON - 1 and r == 0:
            cens[m[s]][a] += 1
        else:
            counts[j][s2] = counts[j].get(s2, 0) + 1
        rsum[j] += r  # reward_center is 0 for [-1, 1]
    rows = []
    for s in range(S):
        acts = []
        for a in range(A):
            row = ["0"] * (S + 1)
            for s2, c in counts[s * A + a].items():
                row[s2] = str(c)
            acts.append("[" + ",".join(row) + "]")
        rows.append("[" + ",".join(acts) + "]")
    head = dict(mechanism="dp_mdp", private=False, seeded=False, unit="episode", n_states=S,
                n_actions=A, gamma=1, rmin=-1, rmax=1, epsilon=1, delta=1e-5, horizon=20, clip=None,
                features="tabular", sensitivity=0, sigma=0, reward_sigma=0, reward_center=0)
    return (json.dumps(head)[:-1] + ', "start": ' + json.dumps(start) + ', "counts": [' + ",".join(rows)
            + '], "reward_sums": ' + json.dumps([rsum[s * A:(s + 1) * A] for s in range(S)])
            + (', "censored": ' + json.dumps(cens) if outcomes else "") + "}")


def cpu(con, sql, params=()):
    """(first column of the first row, CPU seconds of the statement)."""
    t = time.process_time()
    r = con.execute(sql, params).fetchone()
    return (r[0] if r else None), time.process_time() - t


def icu_model():
    """Issue 33's measurement: dp_mdp, dp_mdp_value and dp_mdp_plan with
    their defaults on the ICU model task (1,440 states, 8 actions, 20,000
    stays), against the exact values and a non-private tabular model."""
    sys.path.insert(0, os.path.join(ROOT, "samples", "icu_model"))
    import icu_model as sim
    t0 = time.time()
    truth, true = sim.truth(), sim.Model()
    pols = {k: f() for k, f in sim.RULES.items()}
    names = list(pols)
    beh, opt = truth["behaviour"], truth["optimum"]
    share = lambda v: (v - beh) / (opt - beh)
    simulator = sim.Simulator()
    logs = [simulator.log(ICU_STAYS, seed) for seed in range(1, (1 if QUICK else 5) + 1)]
    n_steps = len(logs[0])
    cut = sum(1 for i, r in enumerate(logs[0])
              if r[1] == sim.HORIZON - 1 and r[4] == 0) / ICU_STAYS
    table_rows(f"The ICU model task (samples/icu_model: {sim.N_STATES} states, {sim.N_ACTIONS} "
               f"actions, at most {sim.HORIZON} steps, undiscounted): exact values over the first "
               f"20 steps (the first log: {n_steps:,} steps of {ICU_STAYS:,} stays, {cut:.1%} cut "
               f"at 20 steps; exact: {truth['behaviour_censored']:.1%}, "
               f"{truth['behaviour_mean_steps']:.2f} steps a stay)",
               ["behaviour", "treat_all", "cautious", "optimum", "optimum's first-step rule"],
               [[f"{truth[k]:.4f}" for k in names + ["optimum", "optimum_first_step_rule"]]])
    # the non-private tabular model
    rows, tab_rmse = [], None
    for label, cen, k in (("censoring known (the baseline)", "known", 1),
                          ("censoring known, pairs with < 10 steps pessimistic", "known", 10),
                          ("every last step an end (dp_mdp's counts, ends terminal)", "as ending", 1)):
        errs, plans = {n: [] for n in names}, []
        for log in logs:
            m = sim.tabular(log, cen, k)
            for n in names:
                errs[n].append(m.value(pols[n]) - truth[n])
            plans.append(true.value(sim.deterministic(m.optimum()[1][0])))
        allerr = [x for n in names for x in errs[n]]
        r = math.sqrt(sum(x * x for x in allerr) / len(allerr))
        if tab_rmse is None:
            tab_rmse = r
        pv = sum(plans) / len(plans)
        rows.append([label, f"{r:.4f}"] + [f"{sum(errs[n]) / len(logs):+.4f}" for n in names] +
                    [f"{pv:.4f}", f"{share(pv):.2f}"])
    table_rows(f"The non-private tabular model of {len(logs)} log(s) of {ICU_STAYS:,} stays "
               f"(counts, no noise), valued over 20 steps: RMSE over the three policies and the "
               f"logs, mean error per policy, the planned rule (the first step of the model's "
               f"20-step optimum) valued exactly, and the share of the optimum's gain over the "
               f"behaviour it keeps",
               ["model", "RMSE", "behaviour", "treat_all", "cautious", "planned rule",
                "share of gain"], rows)
    # dp_mdp of this build, with defaults
    con = connect()
    sim.write_db(con, logs[0])
    occ = true.occupancy(pols["behaviour"])
    visits = [[ICU_STAYS * occ[s * sim.N_ACTIONS + a] for a in range(sim.N_ACTIONS)]
              for s in range(sim.N_STATES)]
    pol_json = json.dumps(pols)
    vo = json.dumps({"horizon": 20, "bootstrap": 0})
    target = max(1.5 * tab_rmse, 0.05)
    rows, boot = [], None
    con.execute("CREATE TEMP TABLE rel(model)")
    agree = 0.0
    for outcomes, label, cen in ((False, "no noise (the counts)", "as ending"),
                                 (True, "no noise, outcome per episode", "known")):
        con.execute("INSERT INTO rel VALUES (?)", (noise_free_release(sim, logs[0], outcomes),))
        res = json.loads(con.execute("SELECT dp_mdp_value(model, ?, ?) FROM rel", (pol_json, vo)).fetchone()[0])
        check = sim.tabular(logs[0], cen)
        agree = max([agree] + [abs(res["policies"][n]["value"] - check.value(pols[n])) for n in names])
        plan = json.loads(con.execute("SELECT dp_mdp_plan(model, '{\"horizon\": 20}') FROM rel").fetchone()[0])
        pv = true.value(sim.deterministic(plan["policy"]))
        err = [res["policies"][n]["value"] - truth[n] for n in names]
        r0 = math.sqrt(sum(x * x for x in err) / 3)
        rows.append([label, "0", "-", "-", "-", "-", f"{res['pessimistic_pairs']}",
                     f"{r0:.4f}"] + [f"{x:+.3f}" for x in err] +
                    [f"{pv:.3f}", f"{share(pv):.2f}", "-", "yes" if r0 <= target else "no"])
        con.execute("DELETE FROM rel")
    for eps, outcomes in [(e, w) for e in ((1,) if QUICK else (0.3, 1, 3)) for w in (False, True)]:
        o = dict(ICU_RELEASE, epsilon=eps)
        verdict = []
        for how in ({}, {"visits": visits}):
            p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(
                dict(o, mechanism="dp_mdp", episodes=ICU_STAYS, value_range=2, outcome=outcomes,
                     **how)),)).fetchone()[0])
            verdict.append(f"{p['useful']} ({p['value_rmse']:.2f})")
        errs, plans, t_rel, mb, t_val, t_plan, pess = [], [], [], [], [], [], []
        for seed in range(1, (1 if QUICK else 3) + 1):
            t = time.process_time()
            con.execute("INSERT INTO rel SELECT dp_mdp(episode, t, state, action, reward, "
                        f"{ICU_OUTCOME + ', ' if outcomes else ''}?) FROM steps",
                        (json.dumps(dict(o, seed=seed)),))
            t_rel.append(time.process_time() - t)
            head, n = con.execute("SELECT substr(model, 1, 1000), length(model) FROM rel").fetchone()
            mb.append(n / 1e6)
            sigma = float(re.search(r'"sigma": ?([-+0-9.eE]+)', head).group(1))
            r, dt = cpu(con, "SELECT dp_mdp_value(model, ?, ?) FROM rel", (pol_json, vo))
            t_val.append(dt)
            r = json.loads(r)
            errs += [r["policies"][n]["value"] - truth[n] for n in names]
            pess.append(r["pessimistic_pairs"])
            r, dt = cpu(con, "SELECT dp_mdp_plan(model, '{\"horizon\": 20}') FROM rel")
            t_plan.append(dt)
            plans.append(true.value(sim.deterministic(json.loads(r)["policy"])))
            if eps == 1 and seed == 1 and not QUICK and not outcomes:  # the bootstrap's cost, 4 draws
                _, dt = cpu(con, "SELECT dp_mdp_value(model, ?, '{\"horizon\": 20, \"bootstrap\": 4}') "
                            "FROM rel", (pol_json,))
                boot = (dt - t_val[-1]) / 4
            con.execute("DELETE FROM rel")
        k = len(plans)
        mean = lambda x: sum(x) / len(x)
        rmse_ = math.sqrt(mean([x * x for x in errs]))
        pv = mean(plans)
        rows.append([f"epsilon {eps:g}{', outcome' if outcomes else ''}", f"{sigma:.1f}", f"{mean(t_rel):.1f}", f"{mean(mb):.0f}",
                     f"{mean(t_val):.2f}", f"{mean(t_plan):.2f}", f"{mean(pess):.0f}", f"{rmse_:.3f}"] +
                    [f"{mean(errs[i::3]):+.3f}" for i in range(3)] +
                    [f"{pv:.3f}", f"{share(pv):.2f}", " / ".join(verdict),
                     "yes" if rmse_ <= target else "no"])
    table_rows(f"dp_mdp + dp_mdp_value + dp_mdp_plan with their defaults on the ICU model task "
               f"({ICU_STAYS:,} stays, the first log; release: horizon 20, gamma 1, delta 1e-5; "
               f"values and plan over 20 steps, bootstrap 0), {1 if QUICK else 3} seeded "
               f"release(s) per epsilon (seeded: not private). CPU seconds; RMSE over the three "
               f"policies and the releases against the exact values; 'useful': dp_plan's verdict "
               f"(its value_rmse, value_range 2) with the default steps per episode / with the "
               f"exact expected visits per pair. Target (issue 33, epsilon 1): RMSE <= "
               f"max(1.5 x {tab_rmse:.4f}, 0.05) = {target:.3f}, share >= 0.75, release <= 5 "
               f"CPU-s and <= 20 MB, evaluation <= 0.2 s. The noise-free rows are dprl reading the "
               f"exact counts (every last step an end; with the outcome, cut stays censored); "
               f"the Python readings of the same counts (tabular 'as ending', 'known') agree "
               f"within {agree:.1e}. 'outcome': dp_mdp's outcome argument, {ICU_OUTCOME}",
               ["release", "sigma", "release CPU-s", "MB", "value CPU-s (3 policies)",
                "plan CPU-s", "pessimistic pairs", "RMSE", "behaviour", "treat_all", "cautious",
                "planned rule", "share of gain", "dp_plan useful", "RMSE within target"], rows)
    if boot is not None:
        print(f"\nThe default bootstrap (200 draws) adds {boot:.2f} CPU-s a draw to each "
              f"dp_mdp_value call: about {200 * boot:.0f} CPU-s a call.")
    icu_groups(sim, con, logs[0], truth, true, pols, occ, target, share)
    print(f"\n(icu_model: {time.time() - t0:.0f} s)")


def problems_map(sim):
    """The public map of the grouped release: a state's three problem
    levels (infection, circulation, respiration), severity and frailty
    dropped: 48 groups, group = (inf 4 + circ) 3 + resp."""
    return [(inf * sim.N_CIRC + circ) * sim.N_RESP + resp
            for sev, inf, circ, resp, frail in map(sim.decode, range(sim.N_STATES))]


def group_policy(sim, groups, pol, occ):
    """A policy over the groups: pol's action probabilities averaged over
    each group's states, weighted by the clinicians' expected visits occ
    (the three rules depend on the problem levels only, so for them this
    is the rule itself)."""
    A, G = sim.N_ACTIONS, max(groups) + 1
    num, w = [[0.0] * A for _ in range(G)], [0.0] * G
    for s, g in enumerate(groups):
        d = sum(occ[s * A:(s + 1) * A])
        w[g] += d
        for a in range(A):
            num[g][a] += d * pol[s][a]
    return [[x / w[g] for x in num[g]] if w[g] else [1.0 / A] * A for g in range(G)]


GROUP_CLIP = 7  # about the 25th percentile of a stay's l2 contribution here


def icu_groups(sim, con, log, truth, true, pols, occ, target, share):
    """dp_mdp with the public map problems_map (features {"map": ...}) and a
    clip, on the first log: values of the three rules over the groups
    against their exact values (a group rule pi_g used at every state of
    the group), the planned group rule used at every state, valued
    exactly."""
    groups = problems_map(sim)
    G, names = max(groups) + 1, list(pols)
    gpol = {n: group_policy(sim, groups, pols[n], occ) for n in names}
    lift = lambda gp: [gp[g] for g in groups]
    lifted = {n: true.value(lift(gpol[n])) for n in names}
    agree = max(abs(lifted[n] - truth[n]) for n in names)
    pol_json, vo = json.dumps(gpol), json.dumps({"horizon": 20, "bootstrap": 0})

    def measure(model, tail, params):
        r = json.loads(con.execute(f"SELECT dp_mdp_value({model}, ?, ?){tail}",
                                   params + (pol_json, vo)).fetchone()[0])
        plan = json.loads(con.execute(f"SELECT dp_mdp_plan({model}, '{{\"horizon\": 20}}'){tail}",
                                      params).fetchone()[0])["policy"]
        pv = true.value(sim.deterministic([plan[g] for g in groups]))
        return [r["policies"][n]["value"] - truth[n] for n in names], pv, r["pessimistic_pairs"]

    mean = lambda x: sum(x) / len(x)
    sd = lambda x: math.sqrt(sum((y - mean(x)) ** 2 for y in x) / (len(x) - 1)) if len(x) > 1 else 0.0
    rows = []
    err, pv, pess = measure("?", "", (noise_free_release(sim, log, True, groups),))
    r0 = math.sqrt(mean([x * x for x in err]))
    rows.append(["no noise (the group counts)", "-", "0", "-", "-", f"{pess}", f"{r0:.3f}"] +
                [f"{x:+.3f}" for x in err] + [f"{pv:.3f}", f"{share(pv):.2f}", "-", "yes" if r0 <= target else "no"])
    gvisits = [[0.0] * sim.N_ACTIONS for _ in range(G)]  # the exact expected visits per group pair
    for s, g in enumerate(groups):
        for a in range(sim.N_ACTIONS):
            gvisits[g][a] += ICU_STAYS * occ[s * sim.N_ACTIONS + a]
    runs = ((1, GROUP_CLIP),) if QUICK else ((0.3, GROUP_CLIP), (1, None), (1, GROUP_CLIP), (3, GROUP_CLIP))
    for eps, clip in runs:
        o = dict(ICU_RELEASE, n_states=G, epsilon=eps, features={"map": groups}, transitions="sparse")
        o["clip"] = clip or "none"
        errs, rm, plans, t_rel, mb, pess = [], [], [], [], [], []
        for seed in range(1, (1 if QUICK else 5) + 1):
            t = time.process_time()
            con.execute(f"INSERT INTO rel SELECT dp_mdp(episode, t, state, action, reward, "
                        f"{ICU_OUTCOME}, ?) FROM steps", (json.dumps(dict(o, seed=seed)),))
            t_rel.append(time.process_time() - t)
            sigma, n = con.execute("SELECT json_extract(model, '$.sigma'), length(model) FROM rel").fetchone()
            mb.append(n / 1e6)
            err, pv, p = measure("model", " FROM rel", ())
            con.execute("DELETE FROM rel")
            errs.append(err)
            rm.append(math.sqrt(mean([x * x for x in err])))
            plans.append(pv)
            pess.append(p)
        allrm = math.sqrt(mean([x * x for e in errs for x in e]))
        po = {k: v for k, v in o.items() if k != "features"}
        plan = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(
            po, mechanism="dp_mdp", episodes=ICU_STAYS, visits=gvisits, outcome=True,
            value_range=2)),)).fetchone()[0])
        rows.append([f"epsilon {eps:g}, " + (f"clip {clip}" if clip else "no clip"), f"{sigma:.1f}",
                     f"{mean(t_rel):.2f}", f"{mean(mb):.2f}", f"{len(errs)}", f"{mean(pess):.0f}",
                     f"{allrm:.3f} ± {sd(rm):.3f}"] +
                    [f"{mean([e[i] for e in errs]):+.3f}" for i in range(3)] +
                    [f"{mean(plans):.3f} ± {sd(plans):.3f}", f"{share(mean(plans)):.2f}",
                     f"{plan['useful']} ({plan['value_rmse']:.2f})", "yes" if allrm <= target else "no"])
    table_rows(f"dp_mdp with grouped states on the ICU model task: features {{\"map\": ...}}, a "
               f"state's three problem levels ({G} groups: severity and frailty dropped), "
               f"sparse (given: at {G} groups the default is dense, which does worse here), horizon 20, "
               f"the outcome argument, "
               f"delta 1e-5; values and plan over 20 steps with "
               f"dp_mdp_value's and dp_mdp_plan's defaults, bootstrap 0. A rule over the groups is "
               f"valued against the exact value of the same rule at every state of the group (the "
               f"three rules need only the problem levels: their group forms are the rules, exact "
               f"values within {agree:.0e}); the planned group rule is valued exactly. Seeded "
               f"releases (not private): RMSE over the three rules and the releases ± the sd of "
               f"the releases' RMSE; planned rule: mean ± sd; dp_plan given the exact expected visits "
               f"per group pair (next_states 1, value_range 2, its value_rmse). Target as above: {target:.3f}",
               ["release", "sigma", "release CPU-s", "MB", "releases", "pessimistic pairs", "RMSE",
                "behaviour", "treat_all", "cautious", "planned rule", "share of gain",
                "dp_plan useful (value_rmse)", "RMSE within target"], rows)


# ---- expert level: the consensus policy (ALGORITHMS.md section 16) ----------

def expert():
    """dp_expert_policy on the clinical sample's clinicians' logs: the exact
    value of the released consensus policy against the clinicians' majority
    rule, and what dp_prefix_stable releases from the same data."""
    sys.path.insert(0, os.path.join(ROOT, "samples", "clinical"))
    import exact  # the sample's dynamic programming on its true model
    rows = []
    for patients, clinicians, eps in ((10000, 200, 1.0), (150000, 3000, 0.1)):
        con = clinical(patients, clinicians)
        truth = exact.all_values(con)
        majority = [int(p) for (p,) in con.execute(
            "SELECT prob FROM policies WHERE rule = 'majority' AND action = 1 ORDER BY state")]
        model = exact.Model(con)
        values, equal = [], 0
        for seed in range(1, SEEDS + 1):
            o = {"n_states": 10, "n_actions": 2, "epsilon": eps, "delta": 1e-6,
                 "default_action": 0, "seed": seed}
            r = json.loads(con.execute(
                "SELECT dp_expert_policy(expert, episode, t, state, action, ?) FROM steps",
                (json.dumps(o),)).fetchone()[0])
            pol = r["policy"]
            values.append(model.value([[1.0 if a == pol[s] else 0.0 for a in (0, 1)]
                                       for s in range(10)]))
            equal += pol == majority
        po = {"epsilon": eps, "delta": 1e-6, "p_min": 0.02, "T": 100, "L": 30, "seed": 1}
        released = con.execute(
            "SELECT count(DISTINCT release) FROM dp_prefix_stable('SELECT episode, t, state, "
            "action FROM steps', 'SELECT expert, state, action, prob FROM clinician_policy', ?)",
            (json.dumps(po),)).fetchone()[0]
        threshold = json.loads(con.execute("SELECT dp_prefix_calibrate(?)", (json.dumps(
            {k: po[k] for k in ("epsilon", "delta", "p_min", "T", "L")}),)).fetchone()[0])
        mean = sum(values) / len(values)
        rows.append([f"{clinicians} x {patients // clinicians}", f"{eps}",
                     f"{r['sigma']:.1f}", f"{mean:.3f}", f"{min(values):.3f}",
                     f"{truth['majority']:.3f}", f"{equal}/{SEEDS}",
                     f"{released} (threshold {threshold['threshold']:,.0f})",
                     "within 0.1" if clinicians == 200 else "equal"])
    table_rows(f"dp_expert_policy on the clinical sample (delta 1e-6, default action 0): the "
               f"exact value of the consensus policy, {SEEDS} seeded releases, against the "
               f"clinicians' majority rule; dp_prefix_stable on the same log (T 100, L 30, "
               f"p_min 0.02, the clinicians' own policies)",
               ["clinicians x patients", "epsilon", "sigma", "consensus value", "worst",
                "majority rule", "policy = majority", "prefixes released", "target"], rows)


if __name__ == "__main__":
    parts = [a for a in sys.argv[1:] if not a.startswith("--")] or ["icu", "chain", "prefix", "study", "offpolicy",
                                                                    "expert", "icu_model"]
    for p in parts:
        globals()[p]()
