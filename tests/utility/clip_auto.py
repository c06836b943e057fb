"""dp_mdp's contribution bound chosen privately ("clip": "auto",
ALGORITHMS.md section 13.6) against fixed clips, on tasks of different
shape with exact values: the clinical sample (stays of at most 30 days,
one outcome reward); an escalation chain whose stays loop for up to 200
steps, their length set by the start state; the same chain cut by a
30-step study window, the cut stays censored (the outcome argument).
RMSE of dp_mdp_value (bootstrap 0, count_floor 0: the floor is floors.py's) over the rules and the seeded
releases, at epsilon 1; per task, the best fixed clip with hindsight.

usage: DPRL_SO=./dprl.so python3 tests/utility/clip_auto.py [--quick]
"""
import json
import math
import os
import random
import sqlite3
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.path.abspath(os.environ.get("DPRL_SO", os.path.join(ROOT, "dprl.so")))
QUICK = "--quick" in sys.argv
SEEDS = 2 if QUICK else 10


def connect():
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(os.path.splitext(SO)[0])
    return con


# ---- the escalation chain ---------------------------------------------------
# Severity s in 0..9.  Action 1 (escalate care) moves s down with
# probability 0.5 and up with 0.1; action 0 (wait) down 0.2, up 0.3.  At
# s = 0 the patient goes home (+1) with probability 0.4 a step, at s = 9
# dies (-1) with probability 0.3; each escalated step costs 0.01.  Stays
# start at severity 2..7: the sicker ones loop for longer.
NS, NA, HORIZON = 10, 2, 200
END = -1


def esc_step(s, a, rng=None, dist=False):
    """The next-state law of (s, a): [(next or END, reward, p)]."""
    out = []
    stay = 1.0
    if s == 0:
        out.append((END, 1.0, 0.4))
        stay = 0.6
    elif s == NS - 1:
        out.append((END, -1.0, 0.3))
        stay = 0.7
    down, up = (0.5, 0.1) if a == 1 else (0.2, 0.3)
    cost = -0.01 if a == 1 else 0.0
    moves = [(max(s - 1, 0), down), (min(s + 1, NS - 1), up), (s, 1 - down - up)]
    for t, p in moves:
        out.append((t, cost, stay * p))
    return out


def esc_truth(policy, H=HORIZON):
    """Exact value over H steps, the start uniform on 2..7."""
    V = [0.0] * NS
    for _ in range(H):
        V = [sum(p * (r + (0 if t == END else V[t])) for t, r, p in esc_step(s, policy[s]))
             for s in range(NS)]
    return sum(V[2:8]) / 6


def esc_log(n, seed, window=None):
    """n stays under the behaviour (escalate with probability 0.6 at
    severity >= 5, else 0.2); with a window, a stay still open after it
    is cut (censored).  Rows (episode, t, state, action, reward, outcome)."""
    rng = random.Random(seed)
    rows = []
    for e in range(n):
        s = rng.randint(2, 7)
        for t in range(window or HORIZON):
            a = 1 if rng.random() < (0.6 if s >= 5 else 0.2) else 0
            u, acc = rng.random(), 0.0
            for nxt, r, p in esc_step(s, a):
                acc += p
                if u < acc:
                    break
            last = nxt == END or t + 1 == (window or HORIZON)
            rows.append((e, t, s, a, r, "terminal" if nxt == END or not window else
                         ("censored" if last else "terminal")))
            if nxt == END:
                break
            s = nxt
    return rows


ESC_RULES = {"escalate at 3+": [1 if s >= 3 else 0 for s in range(NS)],
             "always escalate": [1] * NS, "never escalate": [0] * NS}


def task_escalation(window):
    con = connect()
    con.execute("CREATE TABLE steps(episode, t, state, action, reward, outcome)")
    con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)", esc_log(20000, 7, window))
    truth = {k: esc_truth(p) for k, p in ESC_RULES.items()}
    base = {"n_states": NS, "n_actions": NA, "gamma": 1, "rmin": -1, "rmax": 1, "horizon": HORIZON,
            "epsilon": 1, "delta": 1e-5}
    sql = ("SELECT dp_mdp(episode, t, state, action, reward, outcome, ?) FROM steps" if window else
           "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps")
    return con, sql, base, ESC_RULES, truth, {"horizon": HORIZON, "bootstrap": 0, "count_floor": 0}


def task_clinical():
    sys.path.insert(0, os.path.join(ROOT, "samples", "clinical"))
    import exact
    con = connect()
    con.execute("CREATE TEMP TABLE clinical_config AS SELECT 20000 AS patients, 30 AS clinicians, "
                "1 AS seed, 30 AS max_steps")
    for f in ("model.sql", "log.sql", "rules.sql"):
        with open(os.path.join(ROOT, "samples", "clinical", f)) as fh:
            con.executescript(fh.read())
    names = ["new_rule", "majority", "standard_care"]
    truth = exact.all_values(con)
    pols = {r: exact.rule(con, r) for r in names}
    base = {"n_states": 10, "n_actions": 2, "gamma": 1, "rmin": -1, "rmax": 1, "horizon": 30,
            "epsilon": 1, "delta": 1e-5}
    return (con, "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps", base, pols,
            {r: truth[r] for r in names}, {"horizon": 30, "bootstrap": 0, "count_floor": 0})


def measure(task, clip_opts):
    con, sql, base, pols, truth, vo = task
    errs, clips, shares = [], [], []
    for seed in range(1, SEEDS + 1):
        m = con.execute(sql, (json.dumps(dict(base, seed=seed, **clip_opts)),)).fetchone()[0]
        head = json.loads(m)
        clips.append(head["clip"])
        if "clipped_share" in head:
            shares.append(head["clipped_share"] or 0)
        r = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)", (m, json.dumps(pols), json.dumps(vo))).fetchone()[0])
        errs += [r["policies"][k]["value"] - truth[k] for k in pols]
    rmse = math.sqrt(sum(x * x for x in errs) / len(errs))
    return rmse, clips, shares


def main():
    tasks = [("clinical sample (H 30, dense)", task_clinical()),
             ("escalation, stays up to 200 steps", task_escalation(None)),
             ("escalation, 30-step window, outcome", task_escalation(30))]
    fixed = (2, 4, 8, 16, None) if not QUICK else (4, None)
    autos = (0.25, 0.5, 0.75, 0.9) if not QUICK else (0.5,)
    print(f"\ndp_mdp + dp_mdp_value at epsilon 1, delta 1e-5, 20,000 stays, {SEEDS} seeded releases "
          f"(not private): RMSE over the rules and the releases; auto: the chosen C (mean) and the "
          f"noisy share above it")
    head = ["task"] + [f"clip {c}" if c else "no clip" for c in fixed] + [f"auto q {q}" for q in autos] + ["best fixed"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, task in tasks:
        row, best = [name], None
        for c in fixed:
            r, _, _ = measure(task, {"clip": c} if c else {"clip": "none"})
            row.append(f"{r:.3f}")
            best = r if best is None or r < best else best
        for q in autos:
            r, cl, sh = measure(task, {"clip": "auto", "clip_quantile": q})
            row.append(f"{r:.3f} (C {sum(cl) / len(cl):.1f}, {100 * sum(sh) / len(sh):.0f}%)")
        row.append(f"{best:.3f}")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
