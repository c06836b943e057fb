"""Numerical check of Lemma 1 (Balle et al. 2016, after Nissim et al.) for
the "nrs" constants alpha = 5 sqrt(2 ln(2/delta))/eps and
beta = eps/(4 d + 4 ln(2/delta)): ALGORITHMS.md §4.

Lemma 1 allows any two Gaussian releases N(mu, sigma^2 I_d) and
N(mu', sigma'^2 I_d) with sigma >= alpha |mu - mu'|, sigma' >= alpha |mu - mu'|
and |ln sigma^2 - ln sigma'^2| <= beta.  Scaling sigma to 1, such a pair is
(r, shift) with |ln r^2| <= beta and shift <= min(1, r)/alpha.  The lemma
holds at (eps, delta, d) iff delta(eps) <= delta for all of them, delta(eps)
the hockey-stick divergence, computed here by reference.gaussian_delta.

    /usr/bin/python3 tests/sql/verify_lemma1.py          # about 20 seconds

prints, for each eps, the largest delta(eps)/delta over the grid of delta
and d below (worst cases r = e^{+-beta/2} at the largest shift), and checks
on a subset that a finer grid of (r, shift) never beats those extremes.
tests/sql/test_policy_eval.py runs a smaller grid on every `make test`.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402

EPS = [0.01, 0.1, 0.5, 1, 2, 5, 10, 15, 20, 25, 30, 40, 50, 60]
DELTA = [0.99, 0.9, 0.5, 0.3, 0.1, 1e-2, 1e-3, 1e-6, 1e-10, 1e-15]
DIMS = [1, 2, 3, 5, 10, 50, 200, 1000]


def finer(eps, delta, d):
    """The largest delta(eps) over 9 ratios x 5 shifts, and where."""
    alpha, beta = reference.calibrate(eps, delta, d)
    best = (0.0, None)
    for i in range(9):
        t = -1 + i / 4
        r = math.exp(t * beta / 2)
        for j in range(1, 6):
            v = reference.gaussian_delta(eps, d, r, j / 5 * min(1.0, r) / alpha)
            best = max(best, (v, (t, j / 5)))
    return best


def main():
    print("eps   max delta(eps)/delta   at (delta, d)")
    for eps in EPS:
        worst = max((reference.lemma1_delta(eps, delta, d) / delta, delta, d)
                    for delta in DELTA for d in DIMS)
        print(f"{eps:<5g} {worst[0]:<22.3g} ({worst[1]:g}, {worst[2]})", flush=True)
    print("finer (r, shift) grid: the maximum sits at r = e^{+-beta/2}, full shift")
    ok = True
    for eps in (1, 10, 20, 40):
        for delta in (0.9, 0.1, 1e-6):
            for d in (1, 5):
                v, where = finer(eps, delta, d)
                extreme = reference.lemma1_delta(eps, delta, d)
                same = v <= extreme * (1 + 1e-9) + 1e-300
                ok &= same
                print(f"  eps {eps:g} delta {delta:g} d {d}: finer {v:.4g} at {where}, "
                      f"extremes {extreme:.4g}{'' if same else '  <-- larger'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
