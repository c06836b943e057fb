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


def first_visit(rows, gamma, rmax=1.0, fmax=None):
    """rows: (episode, t, state, reward).  Returns (m, visits, sums)."""
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
            seen.add(s)
            g = sum(gamma ** (j - i) * min(max(steps[j][2], 0.0), rmax)
                    for j in range(i, len(steps)))
            if fmax is not None:
                g = min(max(g, 0.0), fmax)
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
    if kind == "nrs":
        return 5 * math.sqrt(2 * math.log(2 / delta)) / eps, eps / (4 * (d + math.log(2 / delta)))
    r = math.sqrt(d) + math.sqrt(2 * math.log(4 / delta))
    return 15 * math.sqrt(2 * math.log(4 / delta)) / eps, 2 * math.log(2) * eps / (5 * r * r)


def exact(rows, o, mechanism):
    """The diagnostic quantities dp_lsw / dp_lsl report, from scratch."""
    n, gamma = o["n_states"], o["gamma"]
    rmax, fmax = o.get("rmax", 1.0), o.get("fmax")
    m, visits, sums = first_visit(rows, gamma, rmax, fmax)
    v = [visits.get(s, 0) for s in range(n)]
    F = [sums.get(s, 0.0) / v[s] if v[s] else 0.0 for s in range(n)]
    Phi = feature_matrix(n, o.get("features"))
    d = len(Phi[0])
    alpha, beta = calibrate(o["epsilon"], o["delta"], d, o.get("calibration", "nrs"))
    B = fmax if fmax is not None else rmax / (1 - gamma)
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
    else:
        rho, lam = o.get("rho", [1.0] * n), o["lambda"]
        gx = [rho[s] * v[s] / m for s in range(n)]
        A = [[sum(gx[s] * Phi[s][i] * Phi[s][j] for s in range(n)) + (lam / (2 * m) if i == j else 0)
              for j in range(d)] for i in range(d)]
        b = [sum(gx[s] * Phi[s][i] * F[s] for s in range(n)) for i in range(d)]
        theta = solve(A, b)
        rinf, r2 = max(rho), math.sqrt(sum(r * r for r in rho))
        c = phi_norm * rinf / math.sqrt(2 * lam)
        psi = max(math.exp(-k * beta) *
                  (c * math.sqrt(sum(rho[s] * min(v[s] + k, m) for s in range(n))) + r2) ** 2
                  for k in range(m + 1))
        sigma = 2 * alpha * B * phi_norm * math.sqrt(psi) / (lam - phi_norm ** 2 * rinf)
    return {"theta_exact": theta, "psi": psi, "sigma": sigma, "alpha": alpha,
            "beta": beta, "visits": v, "returns": F, "episodes": m, "d": d}
