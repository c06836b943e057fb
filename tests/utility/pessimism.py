"""dp_mdp_plan's pessimistic plan ("pessimism": level, ALGORITHMS.md
section 14.3) on tasks with exact values: per release, the exact value of
the plain plan (greedy on the estimated model), of the pessimistic plan,
of the logging policy and of the optimum; how often the plan's stated
lower bound `lcb` held (at or below the plan's exact value), and how
often the pessimistic plan did worse than the log.

usage: DPRL_SO=./dprl.so python3 tests/utility/pessimism.py [--quick]
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_auto as tasks  # noqa: E402
import intervals  # noqa: E402

sys.path.insert(0, os.path.join(tasks.ROOT, "samples", "clinical"))
import exact  # noqa: E402

QUICK = "--quick" in sys.argv
TRIALS = int(os.environ.get("TRIALS", 3 if QUICK else 10))
LEVELS = (0.9,) if QUICK else (0.75, 0.9, 0.99)


def clinical_truth(con):
    model = exact.Model(con)

    def value(policy):
        return model.value([[1.0 - a, float(a)] for a in policy])
    return value, exact.logged_value(con, model), model.optimal()[0]


def esc_value(pi, H=tasks.HORIZON):
    """Exact value of pi[s] = P(escalate | s) over H steps, start uniform on 2..7."""
    V = [0.0] * tasks.NS
    for _ in range(H):
        V = [sum(pa * sum(p * (r + (0 if t == tasks.END else V[t]))
                          for t, r, p in tasks.esc_step(s, a))
                 for a, pa in ((0, 1 - pi[s]), (1, pi[s])) if pa)
             for s in range(tasks.NS)]
    return sum(V[2:8]) / 6


def esc_truth(_con):
    best = max(esc_value([((k >> s) & 1) for s in range(tasks.NS)]) for k in range(1 << tasks.NS))
    logged = esc_value([0.6 if s >= 5 else 0.2 for s in range(tasks.NS)])
    return (lambda policy: esc_value([float(a) for a in policy])), logged, best


def run(name, make, truth_of, n, H):
    rows = []
    for t in range(1, TRIALS + 1):
        con, sql, base, _pols, _truth, _vo = make(n, 2000 + t)
        value, logged, best = truth_of(con)
        m = con.execute(sql, (json.dumps(dict(base, seed=t, clip="auto")),)).fetchone()[0]
        plain = json.loads(con.execute("SELECT dp_mdp_plan(?, ?)",
                                       (m, json.dumps({"horizon": H, "count_floor": 0}))).fetchone()[0])
        r = {"plain": value(plain["policy"]), "logged": logged, "best": best}
        for lv in LEVELS:
            p = json.loads(con.execute("SELECT dp_mdp_plan(?, ?)",
                                       (m, json.dumps({"horizon": H, "pessimism": lv, "count_floor": 0}))).fetchone()[0])
            r[lv] = (value(p["policy"]), p["lcb"])
        rows.append(r)
        con.close()
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    cells = [name, str(n), f"{mean([r['best'] for r in rows]):.3f}",
             f"{mean([r['logged'] for r in rows]):.3f}", f"{mean([r['plain'] for r in rows]):.3f} "
             f"(worst {min(r['plain'] for r in rows):.3f})"]
    for lv in LEVELS:
        vals = [r[lv][0] for r in rows]
        held = sum(r[lv][1] <= r[lv][0] for r in rows)
        worse = sum(r[lv][0] < r["logged"] for r in rows)
        cells.append(f"{mean(vals):.3f} (worst {min(vals):.3f}; lcb held {held}/{len(rows)}, "
                     f"below the log {worse})")
    print("| " + " | ".join(cells) + " |", flush=True)


def main():
    print(f"\ndp_mdp_plan at epsilon 1, clip auto, {TRIALS} seeded releases per row (not private): "
          f"exact values (mean, worst) of the optimum, the log, the plain plan and the "
          f"pessimistic plans; lcb held: the plan's stated bound at or below its exact value")
    head = ["task", "patients", "optimum", "log", "plain plan"] + [f"pessimism {lv}" for lv in LEVELS]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    sizes = (1000, 5000) if QUICK else (1000, 5000, 20000)
    for n in sizes:
        run("clinical sample", intervals.clinical, clinical_truth, n, 30)
    for n in sizes:
        run("escalation, 30-step window", intervals.escalation(30), esc_truth, n, tasks.HORIZON)


if __name__ == "__main__":
    main()
