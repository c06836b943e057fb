"""Coverage of dp_mdp_value's interval (ci_low, ci_high: the log
bootstrap, ALGORITHMS.md section 14.4) on tasks with exact values: each
trial draws a new log from the task's simulator, releases it (seeded,
epsilon 1) and asks for the 95% interval of every rule; a rule's interval
covers when it holds the exact value.  Also the noise-only error bar
(value +- 1.96 stderr) on the same releases, and the median width.

usage: DPRL_SO=./dprl.so python3 tests/utility/intervals.py [--quick]
"""
import json
import math
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_auto as tasks  # noqa: E402  (the simulators and their exact values)

QUICK = "--quick" in sys.argv
TRIALS = int(os.environ.get("TRIALS", 4 if QUICK else 20))


def clinical(n, seed):
    sys.path.insert(0, os.path.join(tasks.ROOT, "samples", "clinical"))
    import exact
    con = tasks.connect()
    con.execute(f"CREATE TEMP TABLE clinical_config AS SELECT {n} AS patients, 30 AS clinicians, "
                f"{seed} AS seed, 30 AS max_steps")
    for f in ("model.sql", "log.sql", "rules.sql"):
        with open(os.path.join(tasks.ROOT, "samples", "clinical", f)) as fh:
            con.executescript(fh.read())
    names = ["new_rule", "majority", "standard_care"]
    truth = exact.all_values(con)
    base = {"n_states": 10, "n_actions": 2, "gamma": 1, "rmin": -1, "rmax": 1, "horizon": 30,
            "epsilon": 1, "delta": 1e-5}
    return (con, "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps", base,
            {r: exact.rule(con, r) for r in names}, {r: truth[r] for r in names}, {"horizon": 30})


def escalation(window):
    def make(n, seed):
        con = tasks.connect()
        con.execute("CREATE TABLE steps(episode, t, state, action, reward, outcome)")
        con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)",
                        tasks.esc_log(n, seed, window))
        truth = {k: tasks.esc_truth(p) for k, p in tasks.ESC_RULES.items()}
        base = {"n_states": tasks.NS, "n_actions": tasks.NA, "gamma": 1, "rmin": -1, "rmax": 1,
                "horizon": tasks.HORIZON, "epsilon": 1, "delta": 1e-5}
        sql = ("SELECT dp_mdp(episode, t, state, action, reward, outcome, ?) FROM steps"
               if window else "SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps")
        return con, sql, base, tasks.ESC_RULES, truth, {"horizon": tasks.HORIZON}
    return make


def coverage(make, n, release_opts, trials=TRIALS):
    hit = noise_hit = total = 0
    widths = []
    for t in range(1, trials + 1):
        con, sql, base, pols, truth, vo = make(n, 1000 + t)
        m = con.execute(sql, (json.dumps(dict(base, seed=t, **release_opts)),)).fetchone()[0]
        r = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                   (m, json.dumps(pols), json.dumps(dict(vo, bootstrap_seed=t, interval="log")))
                                   ).fetchone()[0])
        for k, v in r["policies"].items():
            total += 1
            hit += v["ci_low"] <= truth[k] <= v["ci_high"]
            noise_hit += abs(v["value"] - truth[k]) <= 1.96 * v["stderr"]
            widths.append(v["ci_high"] - v["ci_low"])
        con.close()
    widths.sort()
    return hit, noise_hit, total, widths[len(widths) // 2]


def main():
    suite = [("clinical sample", clinical), ("escalation, 30-step window", escalation(30)),
             ("escalation, stays up to 200", escalation(None))]
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    suite = [t for t in suite if not only or any(o in t[0] for o in only)]
    sizes = (1000, 5000) if QUICK else (1000, 5000, 20000)
    print(f"\ndp_mdp_value's 95% interval (log bootstrap, 200 draws) at epsilon 1, clip auto; "
          f"{TRIALS} trials, each a new log and a seeded release (not private); coverage over "
          f"the trials and the rules; the noise-only bar value +- 1.96 stderr beside it")
    print("| task | patients | interval covers | noise-only covers | median width |")
    print("|---|---|---|---|---|")
    for name, make in suite:
        for n in sizes:
            if QUICK and name.endswith("200") and n > 1000:
                continue
            hit, nh, tot, w = coverage(make, n, {"clip": "auto"})
            print(f"| {name} | {n} | {hit}/{tot} ({100 * hit / tot:.0f}%) | {nh}/{tot} "
                  f"({100 * nh / tot:.0f}%) | {w:.3f} |", flush=True)


if __name__ == "__main__":
    main()
