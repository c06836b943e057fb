"""dp_mdp_value's count_floor (ALGORITHMS.md section 14.5) on the three
tasks of clip_auto.py: RMSE of three rules' values over seeded releases
at epsilon 1, 20,000 stays, for floors of 0, 2 and 3 times the model's
sigma, without a clip, at clip 4 and with the automatic clip.

usage: DPRL_SO=./dprl.so python3 tests/utility/floors.py [--quick]
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_auto as tasks  # noqa: E402

QUICK = "--quick" in sys.argv
SEEDS = 1 if QUICK else 8
FLOORS = (0, 2, 3)


def main():
    runs = [("clinical sample (H 30, dense)", tasks.task_clinical())]
    if not QUICK:
        runs += [("escalation, stays up to 200 steps", tasks.task_escalation(None)),
                 ("escalation, 30-step window, outcome", tasks.task_escalation(30))]
    clips = (("no clip", {"clip": "none"}), ("clip 4", {"clip": 4}), ("clip auto", {"clip": "auto"}))
    print(f"\ndp_mdp_value's count_floor at epsilon 1, 20,000 stays, {SEEDS} seeded releases "
          f"(not private): RMSE over three rules and the releases")
    head = ["task", "clip"] + [f"floor {k} sigma" for k in FLOORS]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, (con, sql, base, pols, truth, vo) in runs:
        for cname, copts in clips:
            errs = {k: [] for k in FLOORS}
            for seed in range(1, SEEDS + 1):
                m = con.execute(sql, (json.dumps(dict(base, seed=seed, **copts)),)).fetchone()[0]
                sigma = json.loads(m)["sigma"]
                for k in FLOORS:
                    r = json.loads(con.execute(
                        "SELECT dp_mdp_value(?, ?, ?)",
                        (m, json.dumps(pols), json.dumps(dict(vo, count_floor=k * sigma)))
                    ).fetchone()[0])
                    errs[k] += [r["policies"][p]["value"] - truth[p] for p in pols]
            cells = [f"{math.sqrt(sum(x * x for x in e) / len(e)):.3f}" for e in errs.values()]
            print("| " + " | ".join([name, cname] + cells) + " |", flush=True)


if __name__ == "__main__":
    main()
