"""The task suite of dp_mdp, dp_mdp_value and dp_mdp_plan with their
defaults, on five simulated tasks of different shape with exact values:

  clinical    the clinical sample: 10 states, stays of at most 30 days,
              one clinician per patient, one outcome reward at the end;
  chain       the chain of Balle et al. (section 6) with a choice: 20
              states, discounted (gamma 0.99), the reward 1 at its end,
              acting moves on faster at a cost;
  escalation  long looping stays (up to 200 steps) whose length depends on
              the start state;
  window      the same chain cut by a 30-step study window: sparse terminal
              rewards, cut stays marked censored;
  icu         the 1,440-state, 8-action sparse ICU model
              (samples/icu_model), terminal rewards, stays cut at 20 steps.

Per task, size (patients) and epsilon, over seeded releases (not
private), each on a new log from the simulator:

  rmse       dp_mdp_value's RMSE over two new rules, every option at its
             default (the automatic clip, the default count floor);
  best       the best fixed clip (2, 4, 8, 16 or none) with hindsight on
             the same logs, and which;
  covers     how often the 95% interval ("interval": "log") held the exact
             value, over the releases and the two rules; its median width;
  plan       the exact value of dp_mdp_plan's policy (mean, worst), plain
             and with "pessimism": 0.9, against the optimum and the log;
             "below log": pessimistic plans worth less than the log.

usage: DPRL_SO=./dprl.so python3 tests/utility/suite.py [--quick] [--svg F] [--json F] [task ...]
       python3 tests/utility/suite.py --from F1,F2 [--svg F]   (saved runs, one table)
"""
import json
import math
import multiprocessing
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_auto as tasks  # noqa: E402  (the escalation chain, connect())
import intervals  # noqa: E402
import pessimism  # noqa: E402

QUICK = "--quick" in sys.argv
SEEDS = int(os.environ.get("SEEDS", 2 if QUICK else 20))
SIZES = (1000,) if QUICK else (1000, 5000, 20000)
EPSILONS = (1,) if QUICK else (1, 3)
FIXED = (4, None) if QUICK else (2, 4, 8, 16, None)
LEVEL = 0.9

# ---- the chain with a choice ------------------------------------------------
# States 0..19, a stay starts uniform on 0..9.  Waiting (action 0) moves on
# with probability 0.5 (the paper's chain); acting (1) with 0.8 at a cost
# of 0.05 a step.  Moving on from state 19 ends the stay with reward 1.
# The clinicians act with probability 0.3 below state 10 and 0.6 from it.
CN, CH, CGAMMA, CCOST = 20, 200, 0.99, -0.05
CHAIN_RULES = {"always act": [1] * CN, "act from 10": [1 if s >= 10 else 0 for s in range(CN)]}


def chain_step(s, a):
    """[(next or END, reward, p)]."""
    go = 0.8 if a == 1 else 0.5
    cost = CCOST if a == 1 else 0.0
    nxt = (tasks.END, 1.0 + cost) if s == CN - 1 else (s + 1, cost)
    return [(nxt[0], nxt[1], go), (s, cost, 1 - go)]


def chain_values(pi, H=CH):
    """V over H steps, discounted; pi[s] = P(act | s); and the optimum."""
    V = [0.0] * CN
    for _ in range(H):
        V = [sum(pa * sum(p * (r + (0 if t == tasks.END else CGAMMA * V[t])) for t, r, p in chain_step(s, a))
                 for a, pa in ((0, 1 - pi[s]), (1, pi[s])) if pa) for s in range(CN)]
    return sum(V[:10]) / 10


def chain_optimum(H=CH):
    V = [0.0] * CN
    for _ in range(H):
        V = [max(sum(p * (r + (0 if t == tasks.END else CGAMMA * V[t])) for t, r, p in chain_step(s, a))
                 for a in (0, 1)) for s in range(CN)]
    return sum(V[:10]) / 10


def chain_log(n, seed):
    rng = random.Random(seed)
    rows = []
    for e in range(n):
        s = rng.randrange(10)
        for t in range(CH):
            a = 1 if rng.random() < (0.6 if s >= 10 else 0.3) else 0
            u, acc = rng.random(), 0.0
            for nxt, r, p in chain_step(s, a):
                acc += p
                if u < acc:
                    break
            rows.append((e, t, s, a, r))
            if nxt == tasks.END:
                break
            s = nxt
    return rows


def make_chain(n, seed):
    con = tasks.connect()
    con.execute("CREATE TABLE steps(episode, t, state, action, reward)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", chain_log(n, seed))
    base = {"n_states": CN, "n_actions": 2, "gamma": CGAMMA, "rmin": CCOST, "rmax": 1, "horizon": CH,
            "delta": 1e-5}
    truth = {k: chain_values(p) for k, p in CHAIN_RULES.items()}
    return con, "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps", base, CHAIN_RULES, \
        truth, {"horizon": CH}


def chain_plan_truth(_con):
    logged = chain_values([0.6 if s >= 10 else 0.3 for s in range(CN)])
    return (lambda policy: chain_values([float(a) for a in policy])), logged, chain_optimum()


# ---- the ICU model ---------------------------------------------------------
_ICU = {}


def icu_sim():
    if not _ICU:
        sys.path.insert(0, os.path.join(tasks.ROOT, "samples", "icu_model"))
        import icu_model as sim
        t = sim.truth()
        _ICU.update(sim=sim, truth=t, model=sim.Model(), simulator=sim.Simulator(),
                    rules={k: sim.RULES[k]() for k in ("treat_all", "cautious")}, beh=sim.behaviour())
    return _ICU


ICU_OUTCOME = "CASE WHEN t = 19 AND reward = 0 THEN 'censored' ELSE 'terminal' END"


def make_icu(n, seed):
    d = icu_sim()
    con = tasks.connect()
    con.execute("CREATE TABLE steps(episode, t, state, action, reward)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?)", d["simulator"].log(n, seed))
    base = {"n_states": d["sim"].N_STATES, "n_actions": d["sim"].N_ACTIONS, "gamma": 1, "rmin": -1,
            "rmax": 1, "horizon": 20, "delta": 1e-5}
    truth = {k: d["truth"][k] for k in d["rules"]}
    return (con, f"SELECT dp_mdp(episode, t, state, action, reward, {ICU_OUTCOME}, ?) FROM steps", base,
            d["rules"], truth, {"horizon": 20})


def icu_plan_truth(_con):
    d = icu_sim()
    return ((lambda policy: d["model"].value(d["sim"].deterministic(policy))), d["truth"]["behaviour"],
            d["truth"]["optimum"])


def two(make):
    """A task maker keeping its first two rules."""
    def f(n, seed):
        con, sql, base, pols, truth, vo = make(n, seed)
        keep = list(pols)[:2]
        base = {k: v for k, v in base.items() if k != "epsilon"}
        return con, sql, base, {k: pols[k] for k in keep}, {k: truth[k] for k in keep}, vo
    return f


# dp_is_value on the same logs: the behaviour's probability of each logged
# action (a table beh(state, action, prob), or the log's own propensity
# column) and the return range the analyst states (gmin, gmax).
def beh_table(con, prob):
    """beh(state, action, prob) from prob(s, a)."""
    rows = con.execute("SELECT DISTINCT state, action FROM steps").fetchall()
    con.execute("CREATE TABLE beh(state, action, prob)")
    con.executemany("INSERT INTO beh VALUES (?, ?, ?)", [(s, a, prob(s, a)) for s, a in rows])


def esc_prob(s, a):
    p = 0.6 if s >= 5 else 0.2
    return p if a == 1 else 1 - p


def chain_prob(s, a):
    p = 0.6 if s >= 10 else 0.3
    return p if a == 1 else 1 - p


def icu_prob(s, a):
    return icu_sim()["beh"][s][a]


IS = {"clinical": (None, (-1, 1)), "chain": (chain_prob, (-5, 1)), "escalation": (esc_prob, (-3, 1)),
      "window": (esc_prob, (-3, 1)), "icu": (icu_prob, (-1, 1))}


def is_values(key, con, base, pols, H, eps, seed):
    """dp_is_value's value of each rule, every option at its default but the
    stated return range."""
    prob, (lo, hi) = IS[key]
    if prob and not con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'beh'").fetchone()[0]:
        beh_table(con, prob)
    out = {}
    for k, pol in pols.items():
        con.execute("DROP TABLE IF EXISTS tgt")
        con.execute("CREATE TABLE tgt(state, action, prob, PRIMARY KEY (state, action))")
        con.executemany("INSERT INTO tgt VALUES (?, ?, ?)",
                        [(s, a, (row[a] if isinstance(row, list) else float(a == row)))
                         for s, row in enumerate(pol) for a in range(base["n_actions"])])
        b = "propensity" if prob is None else "beh.prob"
        join = "" if prob is None else " JOIN beh USING (state, action)"
        o = {"gamma": base["gamma"], "rmin": base["rmin"], "rmax": base["rmax"], "gmin": lo, "gmax": hi,
             "horizon": H, "epsilon": eps, "delta": base["delta"], "seed": seed}
        r = con.execute(f"SELECT dp_is_value(episode, t, reward, {b}, tgt.prob, ?) FROM steps{join} "
                        f"JOIN tgt USING (state, action)", (json.dumps(o),)).fetchone()[0]
        out[k] = json.loads(r)["value"]
    return out


SUITE = {
    "clinical": ("clinical sample", two(intervals.clinical), pessimism.clinical_truth, 30),
    "chain": ("chain with a choice", make_chain, chain_plan_truth, CH),
    "escalation": ("escalation, stays up to 200", two(intervals.escalation(None)), pessimism.esc_truth,
                   tasks.HORIZON),
    "window": ("escalation, 30-step window", two(intervals.escalation(30)), pessimism.esc_truth,
               tasks.HORIZON),
    "icu": ("ICU model, 1,440 states", make_icu, icu_plan_truth, 20),
}


def value(con, m, pols, vo):
    return json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                  (m, json.dumps(pols), json.dumps(vo))).fetchone()[0])["policies"]


def one(job):
    """One log of one task at one size: every epsilon's releases."""
    key, n, seed = job
    _name, make, truth_of, H = SUITE[key]
    con, sql, base, pols, truth, vo = make(n, 5000 + seed)
    plan_value, logged, best = truth_of(con)
    out = []
    for eps in EPSILONS:
        rel = lambda **o: con.execute(sql, (json.dumps(dict(base, epsilon=eps, seed=seed, **o)),)).fetchone()[0]  # noqa: E731
        m = rel()
        head = json.loads(m)
        r = value(con, m, pols, dict(vo, interval="log", bootstrap_seed=seed))
        row = {"eps": eps, "clip": head["clip"], "err": [r[k]["value"] - truth[k] for k in pols],
               "hit": [r[k]["ci_low"] <= truth[k] <= r[k]["ci_high"] for k in pols],
               "width": [r[k]["ci_high"] - r[k]["ci_low"] for k in pols], "fixed": {}}
        for c in FIXED:
            mf = rel(clip=c if c else "none")
            rf = value(con, mf, pols, dict(vo, bootstrap=0))
            row["fixed"][str(c)] = [rf[k]["value"] - truth[k] for k in pols]
        plan = lambda **o: json.loads(con.execute("SELECT dp_mdp_plan(?, ?)", (m, json.dumps(dict(horizon=H, **o)))).fetchone()[0])  # noqa: E731,E501
        row["plain"] = plan_value(plan()["policy"])
        p = plan(pessimism=LEVEL)
        row["pess"], row["lcb"] = plan_value(p["policy"]), p["lcb"]
        row["logged"], row["best"] = logged, best
        iv = is_values(key, con, base, pols, H, eps, seed)
        row["is_err"] = [iv[k] - truth[k] for k in pols]
        out.append(row)
    con.close()
    return key, n, out


def one_is(job):
    """dp_is_value alone on the log of one(job): {(key, n, eps): errors}."""
    key, n, seed = job
    _name, make, _truth_of, H = SUITE[key]
    con, _sql, base, pols, truth, _vo = make(n, 5000 + seed)
    out = {}
    for eps in EPSILONS:
        iv = is_values(key, con, base, pols, H, eps, seed)
        out[(key, n, eps)] = [iv[k] - truth[k] for k in pols]
    con.close()
    return out


def rms(xs):
    return math.sqrt(sum(x * x for x in xs) / len(xs))


def summarise(results):
    """{(task, n, eps): summary}."""
    cells = {}
    for key, n, rows in results:
        for r in rows:
            cells.setdefault((key, n, r["eps"]), []).append(r)
    out = {}
    for (key, n, eps), rows in cells.items():
        errs = [x for r in rows for x in r["err"]]
        fixed = {c: rms([x for r in rows for x in r["fixed"][c]]) for c in rows[0]["fixed"]}
        bc = min(fixed, key=fixed.get)
        hits = [h for r in rows for h in r["hit"]]
        widths = sorted(w for r in rows for w in r["width"])
        out[(key, n, eps)] = dict(
            rmse=rms(errs), best=fixed[bc], best_clip=bc, clip=sum(r["clip"] for r in rows) / len(rows),
            covers=sum(hits) / len(hits), n_int=len(hits), width=widths[len(widths) // 2],
            optimum=rows[0]["best"], logged=rows[0]["logged"],
            plain=sum(r["plain"] for r in rows) / len(rows), plain_worst=min(r["plain"] for r in rows),
            pess=sum(r["pess"] for r in rows) / len(rows), pess_worst=min(r["pess"] for r in rows),
            lcb_held=sum(r["lcb"] <= r["pess"] for r in rows), below=sum(r["pess"] < r["logged"] for r in rows),
            releases=len(rows), is_rmse=rms([x for r in rows for x in r["is_err"]]))
    return out


def table(out):
    head = ["task", "patients", "epsilon", "RMSE (defaults)", "best fixed clip", "ratio", "dp_is_value RMSE",
            "95% interval covers",
            "median width", "optimum / log", "plan (worst)", f"pessimism {LEVEL} (worst)", "lcb held, below log"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (key, n, eps), c in sorted(out.items(), key=lambda kv: (list(SUITE).index(kv[0][0]), kv[0][1], kv[0][2])):
        bc = "none" if c["best_clip"] == "None" else c["best_clip"]
        lines.append("| " + " | ".join([
            SUITE[key][0], f"{n:,}", str(eps), f"{c['rmse']:.3f}", f"{c['best']:.3f} ({bc})",
            f"{c['rmse'] / c['best']:.1f}" if c["best"] > 0 else "-",
            f"{c['is_rmse']:.3f}" if "is_rmse" in c else "-",
            f"{100 * c['covers']:.0f}% of {c['n_int']}", f"{c['width']:.3f}",
            f"{c['optimum']:.3f} / {c['logged']:.3f}", f"{c['plain']:.3f} ({c['plain_worst']:.3f})",
            f"{c['pess']:.3f} ({c['pess_worst']:.3f})", f"{c['lcb_held']}/{c['releases']}, {c['below']}"]) + " |")
    return "\n".join(lines)


def svg(out, path):
    """RMSE against patients, per task: defaults (solid) and the best fixed
    clip with hindsight (dashed), epsilon 1 (dark) and 3 (light)."""
    keys = [k for k in SUITE if any(c[0] == k for c in out)]
    W, Hh, pad = 230, 190, 40
    ns = sorted({c[1] for c in out})
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(keys) + 20}" height="{Hh + 70}" '
             f'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>']
    lo, hi = 1e-3, 2.0
    ly = lambda v: pad + (Hh - pad - 20) * (1 - (math.log10(max(min(v, hi), lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))  # noqa: E731,E501
    for i, key in enumerate(keys):
        x0 = 20 + i * W
        lx = lambda n: x0 + 30 + (W - 60) * (ns.index(n) / max(1, len(ns) - 1))  # noqa: E731
        parts.append(f'<text x="{x0 + 10}" y="20" font-weight="bold">{SUITE[key][0]}</text>')
        parts.append(f'<line x1="{x0 + 30}" y1="{pad}" x2="{x0 + 30}" y2="{Hh - 20}" stroke="#888"/>')
        parts.append(f'<line x1="{x0 + 30}" y1="{Hh - 20}" x2="{x0 + W - 30}" y2="{Hh - 20}" stroke="#888"/>')
        for v in (0.001, 0.01, 0.1, 1):
            parts.append(f'<text x="{x0}" y="{ly(v) + 4:.1f}">{v:g}</text>')
            parts.append(f'<line x1="{x0 + 28}" y1="{ly(v):.1f}" x2="{x0 + W - 30}" y2="{ly(v):.1f}" '
                         f'stroke="#eee"/>')
        for n in ns:
            parts.append(f'<text x="{lx(n) - 12:.1f}" y="{Hh - 5}">{n // 1000}k</text>')
        for eps, colour in ((1, "#1f4e99"), (3, "#7fa6e0")):
            for what, dash in (("rmse", ""), ("best", ' stroke-dasharray="4 3"')):
                pts = [(lx(n), ly(out[(key, n, eps)][what])) for n in ns if (key, n, eps) in out]
                if pts:
                    parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="'
                                 + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
                parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour if not dash else "white"}" '
                          f'stroke="{colour}"/>' for x, y in pts]
    y = Hh + 20
    parts.append(f'<text x="20" y="{y}">RMSE of dp_mdp_value against patients (log scale). Solid: every '
                 f'default; dashed: the best fixed clip chosen with hindsight. Dark: epsilon 1; '
                 f'light: epsilon 3 (values above 2 drawn at 2).</text>')
    parts.append(f'<text x="20" y="{y + 16}">tests/utility/suite.py, {SEEDS} seeded releases per point, '
                 f'each on a new log.</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def load(paths):
    out = {}
    for p in paths:
        with open(p) as f:
            for k, v in json.load(f).items():
                key, n, eps = k.split("|")
                out[(key, int(n), int(eps))] = v
    return out


def main():
    args = sys.argv[1:]
    opt = {a: args[i + 1] for i, a in enumerate(args) if a in ("--svg", "--json", "--from")}
    if "--from" in opt:  # render saved summaries (--json of earlier runs) together
        out = load(opt["--from"].split(","))
        print(table(out))
        if "--svg" in opt:
            svg(out, opt["--svg"])
        return
    only = [a for a in args if not a.startswith("--") and a not in opt.values()]
    keys = [k for k in SUITE if not only or k in only]
    jobs = [(k, n, s) for k in keys for n in SIZES for s in range(1, SEEDS + 1)
            if not (QUICK and k in ("escalation", "icu") and n > 1000)]
    workers = int(os.environ.get("JOBS", 1 if QUICK else 2))
    print(f"\nThe task suite (tests/utility/suite.py): dp_mdp, dp_mdp_value, dp_mdp_plan with their "
          f"defaults, {SEEDS} seeded releases (not private) per row, each on a new log; RMSE over two "
          f"rules against the exact values; the best fixed clip of {FIXED} chosen with hindsight", flush=True)
    if "--is-only" in args:  # dp_is_value's column into a saved run (--json, read and rewritten)
        errs = {}
        for j in jobs:
            for k, e in one_is(j).items():
                errs.setdefault(k, []).extend(e)
        out = load([opt["--json"]])
        for k, e in errs.items():
            if k in out:
                out[k]["is_rmse"] = rms(e)
    elif workers > 1:
        with multiprocessing.Pool(workers) as pool:
            out = summarise(pool.map(one, jobs, chunksize=1))
    else:
        out = summarise([one(j) for j in jobs])
    print(table(out), flush=True)
    if "--svg" in opt:
        svg(out, opt["--svg"])
    if "--json" in opt:
        with open(opt["--json"], "w") as f:
            json.dump({f"{k}|{n}|{e}": v for (k, n, e), v in out.items()}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
