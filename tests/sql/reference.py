"""An independent implementation of DP-LSW / DP-LSL's exact quantities.

Written in a different style from the C core on purpose, so that the two
agree only if both follow ALGORITHMS.md:
- returns by direct summation G_t = sum_u gamma^(u-t) r_u (not the
  backward recursion);
- every feature form as an explicit dense matrix (no closed forms);
- linear solves by Gaussian elimination, singular values from the Jacobi
  eigenvalue method on M^T M;
- psi by the paper's plain loop over every k (no grouping, no pruning).
"""
import math


def return_range(gamma, rmin=0.0, rmax=1.0, fmin=None, fmax=None):
    """[fmin, fmax]: given, or the range every return lies in,
    [min(0, rmin), max(0, rmax)] / (1 - gamma)."""
    lo = fmin if fmin is not None else min(0.0, rmin) / (1 - gamma)
    hi = fmax if fmax is not None else max(0.0, rmax) / (1 - gamma)
    return lo, hi


def first_visit(rows, gamma, rmax=1.0, fmax=None, rmin=0.0, fmin=None, max_states=None):
    """rows: (episode, t, state, reward).  Returns (m, visits, sums).
    Rewards clamped to [rmin, rmax], returns to [fmin, fmax]; with
    max_states, only the first max_states first-visits of an episode."""
    lo, hi = return_range(gamma, rmin, rmax, fmin, fmax) if gamma < 1 else (fmin or 0.0, fmax)
    episodes = {}
    for e, t, s, r in rows:
        episodes.setdefault(e, []).append((t, s, r))
    visits, sums = {}, {}
    for steps in episodes.values():
        steps.sort()
        seen = set()
        for i, (_, s, _) in enumerate(steps):
            if s in seen:
                continue
            if max_states is not None and len(seen) >= max_states:
                break
            seen.add(s)
            g = sum(gamma ** (j - i) * min(max(steps[j][2], rmin), rmax)
                    for j in range(i, len(steps)))
            g = min(max(g, lo), hi)
            visits[s] = visits.get(s, 0) + 1
            sums[s] = sums.get(s, 0.0) + g
    return len(episodes), visits, sums


def feature_matrix(n, features):
    if features is None or features == "tabular":
        return [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    if isinstance(features, dict):
        k = features["aggregate"]
        d = (n + k - 1) // k
        return [[1.0 if s // k == j else 0.0 for j in range(d)] for s in range(n)]
    return [list(map(float, row)) for row in features]


def solve(A, b):
    """Gaussian elimination with partial pivoting."""
    n = len(A)
    M = [A[i][:] + [b[i]] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(M[r][c]))
        M[c], M[p] = M[p], M[c]
        for r in range(c + 1, n):
            f = M[r][c] / M[c][c]
            for k in range(c, n + 1):
                M[r][k] -= f * M[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (M[r][n] - sum(M[r][k] * x[k] for k in range(r + 1, n))) / M[r][r]
    return x


def sym_eigenvalues(S, sweeps=100):
    """Jacobi rotations on a symmetric matrix."""
    A = [row[:] for row in S]
    n = len(A)
    for _ in range(sweeps):
        off = sum(A[i][j] ** 2 for i in range(n) for j in range(n) if i != j)
        if off < 1e-30:
            break
        for p in range(n):
            for q in range(p + 1, n):
                if abs(A[p][q]) < 1e-300:
                    continue
                th = (A[q][q] - A[p][p]) / (2 * A[p][q])
                t = (1 if th >= 0 else -1) / (abs(th) + math.sqrt(th * th + 1))
                c = 1 / math.sqrt(t * t + 1)
                s = t * c
                for k in range(n):
                    akp, akq = A[k][p], A[k][q]
                    A[k][p], A[k][q] = c * akp - s * akq, s * akp + c * akq
                for k in range(n):
                    apk, aqk = A[p][k], A[q][k]
                    A[p][k], A[q][k] = c * apk - s * aqk, s * apk + c * aqk
    return sorted(A[i][i] for i in range(n))


def gram(M):
    d = len(M[0])
    return [[sum(row[i] * row[j] for row in M) for j in range(d)] for i in range(d)]


def calibrate(eps, delta, d, kind="nrs"):
    """alpha, beta of Lemma 1 (ALGORITHMS.md §4)."""
    if kind == "nrs":
        return 5 * math.sqrt(2 * math.log(2 / delta)) / eps, eps / (4 * (d + math.log(2 / delta)))
    r = math.sqrt(d) + math.sqrt(2 * math.log(4 / delta))
    return 15 * math.sqrt(2 * math.log(4 / delta)) / eps, 2 * math.log(2) * eps / (5 * r * r)


def grid_reserve(alpha, beta, d):
    """ALGORITHMS.md §6: the allowance c (whole grid steps) and the beta
    left for psi, so that ceil(.) moves ln s^2 by at most beta - beta_psi."""
    c = max(math.ceil(alpha * math.sqrt(d)), math.ceil(32 / beta))
    return c, beta - 2 * math.log(1 + 1 / c)


def pow2_at_least(x):
    """The smallest power of two >= x > 0, as an exponent."""
    e = math.ceil(math.log2(x))
    while 2.0 ** e < x:
        e += 1
    while 2.0 ** (e - 1) >= x:
        e -= 1
    return e


def grid(sigma_hi, theta_max):
    """The power-of-two grid: sigma_hi <= 2^39 g and theta_max <= 2^50 g."""
    e = pow2_at_least(sigma_hi) - 39
    if theta_max > 0:
        e = max(e, pow2_at_least(theta_max) - 50)
    return 2.0 ** max(e, -1074)


def exact(rows, o, mechanism):
    """The diagnostic quantities dp_lsw / dp_lsl report, from scratch."""
    n, gamma = o["n_states"], o["gamma"]
    rmax, fmax = o.get("rmax", 1.0), o.get("fmax")
    m, visits, sums = first_visit(rows, gamma, rmax, fmax, o.get("rmin", 0.0), o.get("fmin"))
    v = [visits.get(s, 0) for s in range(n)]
    F = [sums.get(s, 0.0) / v[s] if v[s] else 0.0 for s in range(n)]
    Phi = feature_matrix(n, o.get("features"))
    d = len(Phi[0])
    alpha, beta_lemma = calibrate(o["epsilon"], o["delta"], d, o.get("calibration", "nrs"))
    c, beta = grid_reserve(alpha, beta_lemma, d)  # psi uses the reduced beta
    lo, hi = return_range(gamma, o.get("rmin", 0.0), rmax, o.get("fmin"), fmax) if gamma < 1 \
        else (o.get("fmin", 0.0), fmax)
    B = hi - lo
    phi_norm = math.sqrt(sym_eigenvalues(gram(Phi))[-1])
    if mechanism == "dp_lsw":
        w = o.get("weights", [1.0] * n)
        Wphi = [[math.sqrt(w[s]) * x for x in Phi[s]] for s in range(n)]
        G = gram(Wphi)
        b = [sum(w[s] * Phi[s][i] * F[s] for s in range(n)) for i in range(d)]
        theta = solve(G, b)
        min_sv = math.sqrt(sym_eigenvalues(G)[0])
        K = max(v)
        psi = max(math.exp(-k * beta) * sum(w[s] / max(v[s] - k, 1) ** 2 for s in range(n))
                  for k in range(K + 1))
        sigma = alpha * B * math.sqrt(psi) / min_sv
        theta_max = B * math.sqrt(sum(w)) / min_sv
        sigma_hi = alpha * theta_max
    else:
        rho, lam = o.get("rho", [1.0] * n), o["lambda"]
        gx = [rho[s] * v[s] / m for s in range(n)]
        A = [[sum(gx[s] * Phi[s][i] * Phi[s][j] for s in range(n)) + (lam / (2 * m) if i == j else 0)
              for j in range(d)] for i in range(d)]
        b = [sum(gx[s] * Phi[s][i] * F[s] for s in range(n)) for i in range(d)]
        theta = solve(A, b)
        rinf, r2 = max(rho), math.sqrt(sum(r * r for r in rho))
        c_lam = phi_norm * rinf / math.sqrt(2 * lam)
        psi = max(math.exp(-k * beta) *
                  (c_lam * math.sqrt(sum(rho[s] * min(v[s] + k, m) for s in range(n))) + r2) ** 2
                  for k in range(m + 1))
        gap = lam - phi_norm ** 2 * rinf
        sigma = 2 * alpha * B * phi_norm * math.sqrt(psi) / gap
        sigma_hi = 2 * alpha * B * phi_norm * (c_lam * math.sqrt(m * sum(rho)) + r2) / gap
        theta_max = min(2 * m * phi_norm * B * r2 / lam, B * math.sqrt(2 * m * sum(rho) / lam))
    g = grid(sigma_hi, theta_max)
    steps = c + math.ceil(sigma / g)
    return {"theta_exact": theta, "psi": psi, "sigma": sigma, "alpha": alpha,
            "beta": beta_lemma, "beta_psi": beta, "grid_allowance": c, "grid": g,
            "sigma_hi": sigma_hi, "grid_steps": steps, "sigma_applied": steps * g,
            "visits": v, "returns": F, "episodes": m, "d": d}


# ---- privacy loss, computed directly (ALGORITHMS.md §4, §6) ----------------
#
# delta(eps) of a pair of output distributions P, Q is the hockey-stick
# divergence sum/integral of max(0, p - e^eps q): (eps, delta)-DP for that
# pair means delta(eps) <= delta in both directions.

def _gamma_pq(a, x):
    """Regularised incomplete gamma (P(a, x), Q(a, x)): series below a + 1,
    Lentz's continued fraction above (Numerical Recipes 6.2)."""
    if x <= 0:
        return 0.0, 1.0
    front = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        while abs(term) > abs(total) * 1e-17:
            ap += 1
            term *= x / ap
            total += term
        p = total * front
        return p, 1 - p
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    i = 1
    while True:
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-17 or i > 10000:
            break
        i += 1
    q = front * h
    return 1 - q, q


def _chi2(k, t):
    """(CDF, survival) of the chi-square law with k degrees of freedom at t;
    k = 0 is the point mass at 0."""
    if k == 0:
        return (1.0, 0.0) if t >= 0 else (0.0, 1.0)
    if t <= 0:
        return 0.0, 1.0
    return _gamma_pq(k / 2, t / 2)


def _times_exp(x, f):
    """e^x f without overflow (the result is only compared with f's scale)."""
    if f <= 0:
        return 0.0
    return math.exp(min(x + math.log(f), 700.0))


def _delta_given_u(u, eps, d, r, shift):
    """E_W[(1 - e^{eps - L})^+] for P = N(0, I_d), Q = N(shift e_1, r^2 I_d)
    at the first coordinate u; W = |other coordinates|^2 ~ chi^2_{d-1}.
    L = ln p/q = A(u) + b W with b = (1/r^2 - 1)/2, and e^{-bW} times the
    chi^2_k density is (1+2b)^{-k/2} times the density of chi^2_k/(1+2b)."""
    k = d - 1
    A = d * math.log(r) + ((u - shift) ** 2 / r ** 2 - u * u) / 2
    b = (1 / r ** 2 - 1) / 2
    if b == 0:
        return 0.0 if A <= eps else -math.expm1(eps - A)
    c = 1 + 2 * b
    lead = eps - A - k / 2 * math.log(c)
    if b < 0:  # L > eps  <=>  W < T
        T = (A - eps) / -b
        if T <= 0:
            return 0.0
        return max(0.0, _chi2(k, T)[0] - _times_exp(lead, _chi2(k, c * T)[0]))
    T = (eps - A) / b  # L > eps  <=>  W > T
    if T <= 0:
        return max(0.0, 1 - _times_exp(lead, 1.0))
    return max(0.0, _chi2(k, T)[1] - _times_exp(lead, _chi2(k, c * T)[1]))


def gaussian_delta(eps, d, r, shift, half_width=14.0, steps=2800):
    """delta(eps) of N(0, I_d) against N(shift e_1, r^2 I_d), by Simpson's
    rule over the first coordinate (the rest in closed form).  |u| > 14 has
    probability below 1e-44, far below any delta checked."""
    h = 2 * half_width / steps
    total = 0.0
    for i in range(steps + 1):
        u = -half_width + i * h
        wgt = 1 if i in (0, steps) else (4 if i % 2 else 2)
        total += wgt * math.exp(-u * u / 2) * _delta_given_u(u, eps, d, r, shift)
    return total * h / 3 / math.sqrt(2 * math.pi)


def lemma1_delta(eps, delta, d, kind="nrs"):
    """The largest delta(eps) over the pairs Lemma 1 allows, sigma_X = 1:
    sigma_X' = r with |ln r^2| <= beta, shift <= min(1, r)/alpha (condition
    (a) holds both ways).  The extremes r = e^{+-beta/2} at the largest
    shift are the worst cases (checked on finer grids: ALGORITHMS.md §4)."""
    alpha, beta = calibrate(eps, delta, d, kind)
    worst = 0.0
    for sign in (-1, 1):
        r = math.exp(sign * beta / 2)
        worst = max(worst, gaussian_delta(eps, d, r, min(1.0, r) / alpha))
    return worst


def discrete_gaussian_pmf(s, lo, hi):
    """P(Z = x) for x in lo..hi, Z the discrete Gaussian of scale s (whole
    grid steps), normalised over all integers (mass beyond 40 s: < e^-800)."""
    span = int(40 * s) + 1
    norm = sum(math.exp(-x * x / (2.0 * s * s)) for x in range(-span, span + 1))
    return [math.exp(-x * x / (2.0 * s * s)) / norm for x in range(lo, hi + 1)]


def discrete_delta(eps, k1, s1, k2, s2):
    """delta(eps) of k1 + Z(s1) against k2 + Z(s2) on the integers: the exact
    privacy loss of two releases on the same grid."""
    lo = min(k1, k2) - int(40 * max(s1, s2)) - 1
    hi = max(k1, k2) + int(40 * max(s1, s2)) + 1
    p = discrete_gaussian_pmf(s1, lo - k1, hi - k1)
    q = discrete_gaussian_pmf(s2, lo - k2, hi - k2)
    e = math.exp(eps)
    return sum(max(0.0, a - e * b) for a, b in zip(p, q))


# ---- the statistics perturbation (ALGORITHMS.md §9) -------------------------

def normal_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def analytic_sigma1(eps, delta):
    """Balle & Wang 2018, Theorem 8, sensitivity 1: the smallest sigma with
    Phi(1/(2 sigma) - eps sigma) - e^eps Phi(-1/(2 sigma) - eps sigma) <=
    delta, by bisection (the left side falls as sigma grows)."""
    def d(s):
        return normal_cdf(1 / (2 * s) - eps * s) - math.exp(eps) * normal_cdf(-1 / (2 * s) - eps * s)
    lo, hi = 1e-6, 1e6
    for _ in range(400):
        mid = math.sqrt(lo * hi)
        if d(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def statistics_noise(o, m):
    """c, n_eff, Delta (with the grid allowance), sigma1, grid and sigma."""
    n, gamma = o["n_states"], o["gamma"]
    lo, hi = return_range(gamma, o.get("rmin", 0.0), o.get("rmax", 1.0), o.get("fmin"), o.get("fmax"))
    B = hi - lo
    c = B
    k = o.get("max_states")
    n_eff = min(n, 2 * k) if k else n
    base = math.sqrt(n_eff * (B * B + c * c))
    s1 = analytic_sigma1(o["epsilon"], o["delta"])
    g = 2.0 ** (pow2_at_least(base * s1) - 26)
    while m * max(B, c) / g >= 2.0 ** 51:
        g *= 2
    sens = base + math.sqrt(2 * n_eff) * g
    return dict(c=c, n_eff=n_eff, sens=sens, sigma1=s1, grid=g, sigma=sens * s1, fmin=lo, fmax=hi)


def statistics_estimate(noisy_visits, noisy_centred_sums, nz):
    """Means and standard errors from the noisy statistics (the public
    rule: fewer than 1 noisy visit counts as unvisited)."""
    means, ses = [], []
    for v, sm in zip(noisy_visits, noisy_centred_sums):
        if v < 1:
            means.append(min(max(0.0, nz["fmin"]), nz["fmax"]))
            ses.append(None)
            continue
        f = min(max(nz["fmin"] + sm / v, nz["fmin"]), nz["fmax"])
        means.append(f)
        r = (f - nz["fmin"]) / nz["c"]
        ses.append(nz["sigma"] * math.sqrt(1 + r * r) / v)
    return means, ses
