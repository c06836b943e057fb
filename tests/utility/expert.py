"""Utility of dp_expert_policy (ALGORITHMS.md section 16) on a synthetic
clinicians' log: how often the released consensus is the clinicians'
majority rule, state by state.

The task: severity 0..9, two actions (0 wait, 1 treat).  The majority rule
treats from severity 5 on.  Each clinician follows a rule of their own (the
threshold 5, or 4 or 6 for some) and takes the action of that rule at each
step with probability 0.85, the other one otherwise.  Treating lowers the
severity by one with probability 0.6, waiting raises it with probability
0.4; 10 steps from a uniform start.

For each setting: 20 seeded releases (seeds 1..20; a seeded release is
NOT private: the seeds only make the table reproducible), and per state
the experts with data there, the share of their vote on the majority
action (exact, from a diagnostic release), the fraction of releases whose
released action is the majority rule's, and that fraction as predicted
by the plan's formulas (ALGORITHMS.md §16.6): p_counted p_majority, plus
1 - p_counted where the default action (0) is the rule's.

usage: DPRL_SO=./dprl.so python3 tests/utility/expert.py [--quick]
"""
import json
import math
import os
import random
import sqlite3
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SO = os.path.abspath(os.environ.get("DPRL_SO", os.path.join(ROOT, "dprl.so")))
QUICK = "--quick" in sys.argv
RELEASES = 5 if QUICK else 20
S, A, STEPS, RULE = 10, 2, 10, 5


def majority(s):
    return 1 if s >= RULE else 0


def clinicians_log(n_clinicians, trajectories, seed=22):
    """Rows (clinician, episode, t, state, action) of the synthetic task."""
    rng = random.Random(seed)
    rows = []
    for c in range(n_clinicians):
        u = rng.random()
        threshold = RULE if u < 0.7 else RULE - 1 if u < 0.85 else RULE + 1
        for e in range(trajectories):
            s = rng.randrange(S)
            for t in range(STEPS):
                own = 1 if s >= threshold else 0
                a = own if rng.random() < 0.85 else 1 - own
                rows.append((c, e, t, s, a))
                if a == 1 and rng.random() < 0.6:
                    s = max(0, s - 1)
                elif a == 0 and rng.random() < 0.4:
                    s = min(S - 1, s + 1)
    return rows


def connect(rows):
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(SO)
    con.enable_load_extension(False)
    con.execute("CREATE TABLE log(clinician, episode, t, state, action)")
    con.executemany("INSERT INTO log VALUES (?, ?, ?, ?, ?)", rows)
    return con


def release(con, opts):
    sql = "SELECT dp_expert_policy(clinician, episode, t, state, action, ?) FROM log"
    return json.loads(con.execute(sql, (json.dumps(opts),)).fetchone()[0])


def phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def setting(n_clinicians, trajectories, epsilon, delta=1e-6):
    t0 = time.time()
    con = connect(clinicians_log(n_clinicians, trajectories))
    base = {"n_states": S, "n_actions": A, "epsilon": epsilon, "delta": delta,
            "default_action": 0}
    d = release(con, dict(base, release="diagnostic", seed=0))
    hits = [0] * S
    for seed in range(1, RELEASES + 1):
        r = release(con, dict(base, seed=seed))
        for s in range(S):
            hits[s] += r["policy"][s] == majority(s)
    sigma, min_count = r["sigma"], r["min_count"]
    print(f"\n{n_clinicians} clinicians x {trajectories} trajectories, epsilon {epsilon}, "
          f"delta {delta}: sigma {sigma:.2f} votes, min_count {min_count:.1f}, "
          f"{RELEASES} releases ({time.time() - t0:.1f} s)")
    print("| state | majority rule | experts | agreement | consensus = rule | predicted |")
    print("|---|---|---|---|---|---|")
    total = 0
    for s in range(S):
        n = d["exact_counts"][s]
        v = d["exact_votes"][s]
        q = v[majority(s)] / n if n else float("nan")
        counted = phi((n - min_count) / sigma)
        pred = (counted * phi((2 * q - 1) * n / (sigma * math.sqrt(2)))
                + (1 - counted) * (majority(s) == base["default_action"]))
        total += hits[s]
        print(f"| {s} | {majority(s)} | {n} | {q:.3f} | {hits[s]}/{RELEASES} | {pred:.3f} |")
    print(f"consensus = majority rule at {total} of {S * RELEASES} state releases "
          f"({total / (S * RELEASES):.3f})")
    return total / (S * RELEASES)


def prefix_stable_threshold(epsilon, delta):
    """dp_prefix_stable's threshold on the same task (p_min 0.15: every
    clinician takes each action with probability 0.85 or 0.15), for
    comparison: a prefix's count over n clinicians is at most n."""
    con = connect([])
    c = json.loads(con.execute("SELECT dp_prefix_calibrate(?)", (json.dumps(
        {"epsilon": epsilon, "delta": delta, "p_min": 0.15, "T": 100, "L": STEPS}),)).fetchone()[0])
    return c["threshold"]


def main():
    print("dp_expert_policy on a synthetic clinicians' log (tests/utility/expert.py)")
    setting(200, 50, 1.0)
    setting(3000, 50, 0.1)
    # where it stops answering: too few clinicians for the default min_count
    # (3 sigma) at this epsilon; the defaulted states take action 0
    setting(50, 50, 1.0)
    setting(200, 50, 0.1)
    for n, eps in ((200, 1.0), (3000, 0.1)):
        print(f"\ndp_prefix_stable on the same task at epsilon {eps}, T 100, L {STEPS}: "
              f"threshold {prefix_stable_threshold(eps, 1e-6):,.0f} against a count of at most {n}")


if __name__ == "__main__":
    main()
