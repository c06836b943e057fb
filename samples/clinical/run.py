#!/usr/bin/python3
"""samples/clinical/run.py: the clinical sample end to end (`make clinical`).

Builds samples/clinical/out/clinical.db (model.sql, log.sql with 20,000
patients of 30 clinicians, rules.sql), prints the exact values of the rules
and of the logged policy (exact.py), then the private estimates at
epsilon = 1, delta = 1e-5, next to them:

  - the logged policy's value: dp_is_value with the log's own propensities
    as the target (every weight 1: the private mean return of the log);
  - each rule by importance sampling (dp_is_value);
  - each rule on one private model release (dp_mdp, then dp_mdp_value on
    every rule at once), when this build has them.

Then the same estimates over epsilon, 10 seeded releases each (seeded so
that the figure is reproducible; a seeded release is not private), written
to out/epsilon.dat and, with gnuplot, drawn to out/epsilon.png.  Last,
the clinicians' log (200 clinicians x 50 patients, out/clinicians.db) and, when
this build has it, the private consensus policy (dp_expert_policy).

  /usr/bin/python3 samples/clinical/run.py [--so ./dprl.so] [--quick]
"""
import argparse
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "out")
sys.path.insert(0, HERE)
import exact  # noqa: E402

RULES = ["new_rule", "majority", "logged_mixture", "standard_care", "always_escalate"]
EPS, DELTA, HORIZON = 1.0, 1e-5, 30
# dp_is_value: rewards are +1 / -1 on the last day only, so every return is in [-1, 1]
IS_OPTS = {"gamma": 1, "rmin": -1, "rmax": 1, "gmin": -1, "gmax": 1, "horizon": HORIZON,
           "weight_max": 20, "epsilon": EPS, "delta": DELTA}
# dp_mdp (REFERENCE.md, dp_mdp)
# clip: a public bound on one stay's contribution (most stays are short, so
# few are scaled down; make utility measures the trade-off)
MDP_OPTS = {"n_states": 10, "n_actions": 2, "gamma": 1, "rmin": -1, "rmax": 1,
            "horizon": HORIZON, "clip": 4, "epsilon": EPS, "delta": DELTA}


def connect(path, so):
    con = sqlite3.connect(path)
    con.enable_load_extension(True)
    con.load_extension(os.path.abspath(so))
    con.enable_load_extension(False)
    return con


def build(path, so, patients, clinicians):
    if os.path.exists(path):
        os.remove(path)
    con = connect(path, so)
    con.execute(f"CREATE TEMP TABLE clinical_config AS SELECT {patients} AS patients, "
                f"{clinicians} AS clinicians, 1 AS seed, {HORIZON} AS max_steps")
    for f in ("model.sql", "log.sql", "rules.sql"):
        con.executescript(open(os.path.join(HERE, f)).read())
    con.commit()
    return con


def has(con, name):
    return con.execute("SELECT count(*) FROM pragma_function_list WHERE name = ?",
                       (name,)).fetchone()[0] > 0


def policy_json(con, rule):
    pi = exact.rule(con, rule)
    return [[round(p, 12) for p in row] for row in pi]


def is_value(con, rule, opts):
    """dp_is_value of a rule (or of the log itself: rule None)."""
    if rule is None:
        sql = ("SELECT dp_is_value(episode, t, reward, propensity, propensity, ?) FROM steps")
        return json.loads(con.execute(sql, (json.dumps(opts),)).fetchone()[0])
    sql = ("SELECT dp_is_value(s.episode, s.t, s.reward, s.propensity, p.prob, ?) "
           "FROM steps s JOIN policies p ON p.rule = ? AND p.state = s.state "
           "AND p.action = s.action")
    return json.loads(con.execute(sql, (json.dumps(opts), rule)).fetchone()[0])


def mdp_values(con, opts, rules):
    """One dp_mdp release, then every rule on it: {rule: (value, stderr)}."""
    model = con.execute("SELECT dp_mdp(episode, t, state, action, reward, ?) FROM steps",
                        (json.dumps(opts),)).fetchone()[0]
    pols = {r: policy_json(con, r) for r in rules}
    res = json.loads(con.execute("SELECT dp_mdp_value(?, ?, ?)",
                                 (model, json.dumps(pols),
                                  json.dumps({"horizon": HORIZON, "count_floor":
                                              3 * json.loads(model)["sigma"]}))).fetchone()[0])
    return {r: (v["value"], v.get("stderr")) for r, v in res["policies"].items()}


def fmt(x, se=None):
    if x is None:
        return "-"
    s = f"{x: .3f}"
    return s + (f" ± {se:.3f}" if se is not None else "")


def section(title):
    print(f"\n== {title}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--so", default=os.path.join(ROOT, "dprl.so"))
    ap.add_argument("--quick", action="store_true", help="3 releases per epsilon, not 10")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)

    section("the patients' log: 20,000 patients, 30 clinicians")
    con = build(os.path.join(OUT, "clinical.db"), a.so, 20000, 30)
    n, steps, died, home = con.execute(
        "SELECT count(DISTINCT episode), count(*), sum(reward = -1), sum(reward = 1) "
        "FROM steps").fetchone()
    print(f"{n} patients, {steps} patient-days ({steps / n:.1f} a stay), "
          f"{home} discharged home, {died} died, {n - home - died} still in the unit at day {HORIZON}")
    print("clinicians escalate at severity >= 5, 6 or 7:",
          dict(con.execute("SELECT threshold, count(*) FROM clinicians GROUP BY 1")))

    section("exact values in the simulator (exact.py: P(home) - P(died) within 30 days)")
    truth = exact.all_values(con)
    for k in ["logged"] + RULES + ["optimal"]:
        print(f"  {k:16s} {truth[k]: .3f}")

    section(f"private estimates at epsilon = {EPS}, delta = {DELTA} (one release each)")
    mdp = has(con, "dp_mdp") and has(con, "dp_mdp_value")
    private_mdp = {}
    if mdp:
        try:
            private_mdp = mdp_values(con, MDP_OPTS, RULES)
        except sqlite3.Error as e:
            print(f"  dp_mdp failed: {e}")
    else:
        print("  dp_mdp not available in this build (the model-based column stays empty)")
    logged = is_value(con, None, IS_OPTS)
    print(f"  {'policy':16s} {'exact':>7s}   {'model (dp_mdp)':>16s}   "
          f"{'IS (dp_is_value, W = 20)':>24s}   {'IS noise-free':>13s}")
    print(f"  {'logged':16s} {truth['logged']: .3f}   {'-':>16s}   "
          f"{fmt(logged['value'], logged['stderr']):>24s}   {'(weights 1)':>13s}")
    for r in RULES:
        got = is_value(con, r, IS_OPTS)
        ex = is_value(con, r, dict(IS_OPTS, release="diagnostic", seed=0))["exact"]["weighted"]
        m = private_mdp.get(r)
        print(f"  {r:16s} {truth[r]: .3f}   {fmt(*m) if m else '-':>16s}   "
              f"{fmt(got['value'], got['stderr']):>24s}   {ex: 13.3f}")
    print("  (IS is biased for rules far from the clinicians' habits: few stays follow them;"
          "\n   its stderr counts the noise only)")

    section("over epsilon: seeded releases (reproducible, so not private)")
    reps = 3 if a.quick else 10
    eps_list = [0.1, 0.2, 0.5, 1, 2, 5, 10]
    rows = []
    for eps in eps_list:
        line = [eps]
        for r in ("new_rule", "majority"):
            v = [is_value(con, r, dict(IS_OPTS, epsilon=eps, seed=s))["value"]
                 for s in range(reps)]
            line += [sum(v) / reps, math.sqrt(sum((x - sum(v) / reps) ** 2 for x in v) / reps)]
        if private_mdp:
            ms = [mdp_values(con, dict(MDP_OPTS, epsilon=eps, seed=s), ["new_rule", "majority"])
                  for s in range(reps)]
            for r in ("new_rule", "majority"):
                v = [m[r][0] for m in ms]
                line += [sum(v) / reps, math.sqrt(sum((x - sum(v) / reps) ** 2 for x in v) / reps)]
        else:
            line += [float("nan")] * 4
        rows.append(line)
        print(f"  eps {eps:5g}: IS new_rule {line[1]: .3f} (sd {line[2]:.3f}), "
              f"majority {line[3]: .3f} (sd {line[4]:.3f})"
              + (f"; model new_rule {line[5]: .3f}, majority {line[7]: .3f}"
                 if private_mdp else ""))
    dat = os.path.join(OUT, "epsilon.dat")
    with open(dat, "w") as f:
        f.write("# epsilon\tis_new\tsd\tis_majority\tsd\tmdp_new\tsd\tmdp_majority\tsd\t"
                "exact_new\texact_majority\texact_logged\n")
        for line in rows:
            f.write("\t".join(f"{x:.6g}" for x in line) +
                    f"\t{truth['new_rule']:.6g}\t{truth['majority']:.6g}\t{truth['logged']:.6g}\n")
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot", "-e", f"mdp = {1 if private_mdp else 0}",
                        os.path.join(HERE, "plot.gp")], cwd=ROOT, check=True)
        print(f"  wrote {os.path.relpath(dat, ROOT)} and samples/clinical/out/epsilon.png")
    else:
        print(f"  wrote {os.path.relpath(dat, ROOT)} (no gnuplot: apt-get install gnuplot-nox "
              "to draw it)")

    section("the clinicians' log: 200 clinicians x 50 patients")
    c2 = build(os.path.join(OUT, "clinicians.db"), a.so, 10000, 200)
    t2 = exact.all_values(c2)
    print(f"  exact: majority rule {t2['majority']: .3f}, their mixture "
          f"{t2['logged_mixture']: .3f}, the log {t2['logged']: .3f}, "
          f"standard care {t2['standard_care']: .3f}, optimal {t2['optimal']: .3f}")
    if has(c2, "dp_expert_policy"):
        try:
            o = {"n_states": 10, "n_actions": 2, "epsilon": EPS, "delta": DELTA,
                 "default_action": 0}
            r = json.loads(c2.execute("SELECT dp_expert_policy(expert, episode, t, state, action, ?) "
                                      "FROM steps", (json.dumps(o),)).fetchone()[0])
            pol = r["policy"]
            pi = [[1.0 if a_ == pol[s] else 0.0 for a_ in (0, 1)] for s in range(10)]
            v = exact.Model(c2).value(pi)
            print(f"  private consensus policy (dp_expert_policy, epsilon {EPS}): {pol}, "
                  f"exact value {v: .3f}")
        except (sqlite3.Error, KeyError, TypeError) as e:
            print(f"  dp_expert_policy failed: {e}")
    else:
        print("  dp_expert_policy not available in this build")


if __name__ == "__main__":
    main()
