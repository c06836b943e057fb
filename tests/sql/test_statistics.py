"""The statistics perturbation of dp_lsw / dp_lsl (ALGORITHMS.md §9),
negative rewards (rmin, fmin), the contribution bound max_states, and
dp_plan.  Expected values come from reference.py (first visits by direct
summation, the analytic Gaussian by bisection on the normal CDF);
randomised checks use fixed seeds and bounds of 5 standard errors."""
import json
import math
import random

from harness import check, check_close, check_error, connect, run, sql_error
import reference

BASE = {"n_states": 4, "gamma": 0.5, "rmin": 0, "rmax": 1, "epsilon": 1, "delta": 1e-5}
# rewards in [-1, 1] (some outside, clamped), episodes of different shapes
ROWS = [(1, 0, 0, 1.0), (1, 1, 1, -1.0), (1, 2, 2, 3.0), (1, 3, 0, -0.5),
        (2, 0, 1, 0.5), (2, 1, 2, -2.0), (3, 0, 2, 0.25), (4, 0, 3, -1.0),
        (4, 1, 3, 1.0), (5, 0, 0, 0.0)]
NEG = dict(BASE, rmin=-1, rmax=1)


def table(con, rows, name="steps"):
    con.execute(f"CREATE TABLE {name}(episode, t, state, reward)")
    con.executemany(f"INSERT INTO {name} VALUES (?,?,?,?)", rows)


def release(con, fn, o, table_="steps"):
    sql = f"SELECT {fn}(episode, t, state, reward, ?) FROM {table_}"
    return json.loads(con.execute(sql, (json.dumps(o),)).fetchone()[0])


def stats(o, rows=ROWS):
    m, v, s = reference.first_visit(rows, o["gamma"], o.get("rmax", 1.0), o.get("fmax"),
                                    o.get("rmin", 0.0), o.get("fmin"), o.get("max_states"))
    n = o["n_states"]
    return m, [v.get(i, 0) for i in range(n)], [s.get(i, 0.0) for i in range(n)]


def test_exact_and_sigma():
    con = connect()
    table(con, ROWS)
    for name, o in (("rewards in [0, 1]", BASE), ("rewards in [-1, 1]", NEG),
                    ("fmin -1.5, fmax 1", dict(NEG, fmin=-1.5, fmax=1)),
                    ("max_states 1", dict(NEG, max_states=1))):
        r = release(con, "dp_lsw", dict(o, perturb="statistics", release="diagnostic", seed=3))
        m, v, s = stats(o)
        nz = reference.statistics_noise(o, m)
        check(r["exact_visits"] == v, f"{name}: exact visits = reference", (r["exact_visits"], v))
        check_close(r["returns"], [s[i] / v[i] if v[i] else 0.0 for i in range(4)],
                    f"{name}: exact mean returns = reference (rewards clamped to [rmin, rmax])")
        check_close(r["sigma"], nz["sigma"], f"{name}: sigma = Delta sigma1 (analytic Gaussian, "
                    f"bisection)", rel=1e-9)
    # the example: -1/+1 rewards are no longer clamped to 0
    r0 = release(con, "dp_lsw", dict(BASE, perturb="statistics", release="diagnostic", seed=3))
    r1 = release(con, "dp_lsw", dict(NEG, perturb="statistics", release="diagnostic", seed=3))
    check(min(r0["returns"]) >= 0 and min(r1["returns"]) < 0,
          "rmin = -1 keeps negative returns; the default rmin = 0 clamps them", r1["returns"])
    # the output perturbation uses the same range: B = fmax - fmin
    ro = release(con, "dp_lsw", dict(NEG, release="diagnostic", seed=3))
    ref = reference.exact(ROWS, NEG, "dp_lsw")
    check_close(ro["sigma"], ref["sigma"], "output perturbation with rmin: sigma = reference "
                "(B = fmax - fmin = 4)", rel=1e-9)


def test_private_keys():
    con = connect()
    table(con, ROWS)
    r = json.loads(con.execute("SELECT dp_lsw(episode, t, state, reward, ?) FROM steps",
                               (json.dumps(dict(BASE, perturb="statistics")),)).fetchone()[0])
    check(set(r) == {"mechanism", "private", "unit", "epsilon", "delta", "n_states", "d",
                     "episodes", "perturb", "theta", "values", "sigma", "visits", "se"}
          and r["private"] is True and r["unit"] == "episode",
          "statistics, private: noisy release, its post-processing and public parameters only",
          sorted(r))
    check(all(isinstance(x, float) for x in r["visits"]), "visits released are the noisy ones")
    r = release(con, "dp_lsw", dict(BASE, perturb="statistics", seed=1))
    check(r["private"] is False and r["seeded"] is True, "seeded statistics release: not private")


def test_noise_distribution():
    """1500 seeded releases of one dataset: the noise on c x visits is
    N(0, sigma^2) (mean, variance and the share within one sigma, each
    within 5 standard errors)."""
    con = connect()
    table(con, ROWS)
    n = 1500
    cols = ", ".join("dp_lsw(episode, t, state, reward, ?)" for _ in range(50))
    errs = []
    m, v, _ = stats(BASE)
    nz = reference.statistics_noise(BASE, m)
    for k in range(n // 50):
        params = [json.dumps(dict(BASE, perturb="statistics", seed=50 * k + i + 1)) for i in range(50)]
        for res in con.execute(f"SELECT {cols} FROM steps", params).fetchone():
            r = json.loads(res)
            errs += [(r["visits"][s] - v[s]) * nz["c"] for s in range(4)]
    N = len(errs)
    sig = nz["sigma"]
    mean = sum(errs) / N
    var = sum((e - mean) ** 2 for e in errs) / (N - 1)
    within = sum(abs(e) <= sig for e in errs) / N
    p = math.erf(1 / math.sqrt(2))
    check(abs(mean) <= 5 * sig / math.sqrt(N), "count noise: mean 0", f"{mean / sig:.4f} sigma")
    check(abs(var / sig ** 2 - 1) <= 5 * math.sqrt(2 / N), "count noise: variance sigma^2",
          f"ratio {var / sig ** 2:.4f}")
    check(abs(within - p) <= 5 * math.sqrt(p * (1 - p) / N), "count noise: 68.3% within one sigma",
          f"{within:.4f}")


def test_estimator_post_processing():
    """What the release computes from the noisy statistics, recomputed here
    from the released visits and standard errors (the same seed gives the
    same noisy statistics whatever the features)."""
    con = connect()
    rows = [(e, t, (e + t) % 4, 0.25 * ((e * t) % 5)) for e in range(400) for t in range(3)]
    table(con, rows)
    o = dict(NEG, epsilon=5, perturb="statistics", seed=9)
    tab = release(con, "dp_lsw", o)
    m, v, _ = stats(o, rows)
    nz = reference.statistics_noise(o, m)
    vis, se = tab["visits"], tab["se"]
    means = []
    for s in range(4):
        r = math.sqrt(max(0.0, (se[s] * vis[s] / nz["sigma"]) ** 2 - 1))
        means.append(nz["fmin"] + nz["c"] * r)
    check_close(tab["values"], means, "tabular LSW: value = clamp(fmin + sum/visits) and se = "
                "sigma sqrt(1 + ((mean - fmin)/c)^2) / visits agree", rel=1e-9, abs_=1e-9)
    agg = release(con, "dp_lsw", dict(o, features={"aggregate": 2}, weights=[1, 3, 2, 0.5]))
    want = [(1 * means[0] + 3 * means[1]) / 4, (2 * means[2] + 0.5 * means[3]) / 2.5]
    check_close(agg["theta"], want, "aggregate LSW: weighted mean of the noisy means", rel=1e-9)
    phi = [[1, 0], [1, 1], [1, 2], [1, 3]]
    dense = release(con, "dp_lsw", dict(o, features=phi))
    G = reference.gram(phi)
    b = [sum(phi[s][i] * means[s] for s in range(4)) for i in range(2)]
    check_close(dense["theta"], reference.solve(G, b), "dense LSW: least squares on the noisy means",
                rel=1e-8, abs_=1e-9)
    lsl = release(con, "dp_lsl", dict(o, **{"lambda": 10}))
    lm = []
    for s in range(4):
        r = math.sqrt(max(0.0, (lsl["se"][s] * lsl["visits"][s] / nz["sigma"]) ** 2 - 1))
        lm.append(nz["fmin"] + nz["c"] * r)
    want = [max(lsl["visits"][s], 0) * lm[s] / (max(lsl["visits"][s], 0) + 10 / 2) for s in range(4)]
    check_close(lsl["theta"], want, "tabular LSL: rho n F / (rho n + lambda/2) with noisy n, F",
                rel=1e-8, abs_=1e-9)
    # a state nobody visits: treated as unvisited when its noisy count < 1
    con2 = connect()
    table(con2, [(1, 0, 0, 1.0)])
    seen = set()
    for seed in range(1, 40):
        r = release(con2, "dp_lsw", dict(BASE, perturb="statistics", seed=seed))
        for s in range(1, 4):
            if r["visits"][s] < 1:
                seen.add("low")
                check(r["values"][s] == 0 and r["se"][s] is None,
                      f"noisy count < 1 (seed {seed}, state {s}): value 0, se null")
            else:
                seen.add("high")
        check(all(0 <= x <= 2 for x in r["values"]), "values clamped to [fmin, fmax] = [0, 2]")
    check(seen == {"low", "high"}, "both sides of the unvisited rule were exercised", seen)


def test_first_visit_rules():
    """dp_first_visit (the scale-out half) applies the same rmin, fmin and
    max_states, so dp_lsw_from_stats over its sums equals dp_lsw."""
    con = connect()
    table(con, ROWS)
    for o in (NEG, dict(NEG, max_states=1), dict(NEG, fmin=-1.5, fmax=1)):
        fv = {k: o[k] for k in o if k not in ("epsilon", "delta")}
        got = con.execute("SELECT state, count(*), sum(first_visit_return), min(max_states) "
                          "FROM dp_first_visit('SELECT episode, t, state, reward FROM steps', ?) "
                          "GROUP BY state ORDER BY state", (json.dumps(fv),)).fetchall()
        m, v, sm = stats(o)
        want = [(i, v[i], sm[i], o.get("max_states")) for i in range(4) if v[i]]
        check(len(got) == len(want) and all(a[0] == b[0] and a[1] == b[1] and abs(a[2] - b[2]) <= 1e-12
                                            and a[3] == b[3] for a, b in zip(got, want)),
              f"dp_first_visit with {fv}: per-state sums = reference, and the bound", (got, want))
        st = dict(o, perturb="statistics", seed=4, episodes=m)
        a = json.loads(con.execute(
            "SELECT dp_lsw_from_stats(state, visits, s, k, ?) FROM (SELECT state, count(*) AS visits, "
            "sum(first_visit_return) AS s, min(max_states) AS k FROM dp_first_visit('SELECT episode, "
            "t, state, reward FROM steps', ?) GROUP BY state)",
            (json.dumps(st), json.dumps(fv))).fetchone()[0])
        b = release(con, "dp_lsw", dict(o, perturb="statistics", seed=4))
        check(a["theta"] == b["theta"] and a["visits"] == b["visits"],
              f"statistics release from dp_first_visit sums = dp_lsw on the rows ({fv})")


def test_plan():
    con = connect()
    table(con, ROWS)
    m, v, _ = stats(NEG)
    plan_o = dict(NEG, episodes=m, visits=v)
    p = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(plan_o),)).fetchone()[0])
    out = release(con, "dp_lsw", dict(NEG, release="diagnostic", seed=2))
    st = release(con, "dp_lsw", dict(NEG, perturb="statistics", seed=2))
    check(p["output"]["sigma"] == out["sigma_applied"], "plan: output sigma = the release's",
          (p["output"]["sigma"], out["sigma_applied"]))
    check(p["statistics"]["sigma"] == st["sigma"], "plan: statistics sigma = the release's")
    nz = reference.statistics_noise(NEG, m)
    want = [nz["sigma"] * math.sqrt(2) / v[s] if v[s] else None for s in range(4)]
    check(all((a is None and b is None) or abs(a - b) <= 1e-12 * b
              for a, b in zip(p["statistics"]["error"], want)),
          "plan: statistics error = sigma sqrt(1 + (B/c)^2) / n per state (tabular)",
          (p["statistics"]["error"], want))
    check(p["output"]["error"] == [out["sigma_applied"]] * 4, "plan: output error = the scale")
    # dense Phi: the error of each value from the linear map, computed here
    phi = [[1, 0], [1, 1], [1, 2], [1, 3]]
    pd = json.loads(con.execute("SELECT dp_plan(?)", (json.dumps(dict(plan_o, features=phi)),)).fetchone()[0])
    G = reference.gram(phi)
    inv = [reference.solve(G, [1.0 if i == j else 0.0 for i in range(2)]) for j in range(2)]
    se = [nz["sigma"] * math.sqrt(2) / v[t] if v[t] else 0.0 for t in range(4)]
    want = []
    for s in range(4):
        var = 0.0
        for t in range(4):
            dot = sum(phi[s][i] * inv[i][j] * phi[t][j] for i in range(2) for j in range(2))
            var += (dot * se[t]) ** 2
        want.append(math.sqrt(var))
    check_close(pd["statistics"]["error"], want, "plan: dense features error by the linear map",
                rel=1e-9)
    rowsum = [math.sqrt(sum(x * x for x in phi[s])) for s in range(4)]
    check_close(pd["output"]["error"], [pd["output"]["sigma"] * r for r in rowsum],
                "plan: output error = scale x ||phi_s||")
    flags = dict(con.execute("SELECT name, flags FROM pragma_function_list WHERE name = 'dp_plan'"))
    check(not flags["dp_plan"] & 0x800,
          "dp_plan is not marked deterministic (LAPACK's bits change with the machine)")


def test_errors():
    con = connect()
    table(con, ROWS)
    q = "SELECT dp_lsw(episode, t, state, reward, ?) FROM steps"
    bad = [
        (dict(BASE, perturb="noise"), 'dp_lsw: option perturb must be one of "output", "statistics", '
         'got "noise"'),
        (dict(BASE, perturb="statistics", calibration="nrs"), 'dp_lsw: option calibration applies to '
         'perturb "output" (the constants of Lemma 1), not to "statistics"'),
        (dict(BASE, max_states=2), 'dp_lsw: option max_states applies to perturb "statistics" (a '
         'contribution bound), not to "output"'),
        (dict(BASE, perturb="statistics", max_states=0), "dp_lsw: option max_states must be in "
         "[1, 2.14748e+09], got 0"),
        (dict(BASE, rmin=2), "dp_lsw: option rmax must be > rmin = 2, got 1"),
        (dict(BASE, fmax=-1), "dp_lsw: option fmax must be > 0, got -1"),
    ]
    for o, msg in bad:
        check_error(con, q, msg, "refused: " + msg, (json.dumps(o),))
    plan = "SELECT dp_plan(?)"
    pbad = [
        (dict(BASE, episodes=5), "dp_plan: option visits is required (hypothetical episodes per "
         "state, one number per state)"),
        (dict(BASE, episodes=5, visits=[1, 2]), "dp_plan: option visits must be an array of 4 numbers (one per state), "
         "got an array of 2"),
        (dict(BASE, episodes=5, visits=[1, 2, 3, 9]), "dp_plan: option visits[3] must be in [0, 5], got 9"),
        (dict(BASE, episodes=5, visits=[1, 2, 3, 1.5]), "dp_plan: option visits must hold integers, "
         "got 1.5 (state 3)"),
        (dict(BASE, visits=[1, 2, 3, 1]), "dp_plan: option episodes is required"),
        (dict(BASE, episodes=5, visits=[1, 2, 3, 1], rho=[1, 1, 1, 1]),
         "dp_plan: option rho does not apply to mechanism dp_lsw"),
        (dict(BASE, episodes=5, visits=[1, 2, 3, 1], mechanism="dp_lsl", weights=[1, 1, 1, 1]),
         "dp_plan: option weights does not apply to mechanism dp_lsl"),
        (dict(BASE, episodes=5, visits=[1, 2, 3, 1], seed=1), 'dp_plan: unknown option "seed" (known: '
         'mechanism, visits, episodes, n_states, gamma, epsilon, delta, rmin, rmax, fmin, fmax, '
         'features, weights, rho, lambda, max_states, calibration, perturb)'),
    ]
    for o, msg in pbad:
        check_error(con, plan, msg, "refused: " + msg, (json.dumps(o),))


def test_neighbours_same_outcome():
    """No error of the statistics perturbation depends on the data: for
    extreme public options, neighbouring datasets (one episode replaced)
    both release."""
    con = connect()
    a = [(1, 0, 0, 1.0), (2, 0, 1, 0.0)]
    b = [(1, 0, 0, 1.0), (2, 0, 0, 1.0)]
    table(con, a, "a")
    table(con, b, "b")
    for o in (dict(BASE, epsilon=1e-6), dict(BASE, epsilon=1e6), dict(BASE, delta=0.999),
              dict(BASE, fmax=1e-12), dict(BASE, fmax=1e12), dict(BASE, n_states=100000)):
        o = dict(o, perturb="statistics")
        ea = sql_error(con, "SELECT dp_lsw(episode, t, state, reward, ?) FROM a", (json.dumps(o),))
        eb = sql_error(con, "SELECT dp_lsw(episode, t, state, reward, ?) FROM b", (json.dumps(o),))
        check(ea == eb, f"neighbours, same outcome: {o}", (ea, eb))


run([test_exact_and_sigma, test_private_keys, test_noise_distribution, test_first_visit_rules, test_estimator_post_processing,
     test_plan, test_errors, test_neighbours_same_outcome])
