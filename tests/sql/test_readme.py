"""Every ```sql block of README.md and of the guides in docs/ runs as
pasted, and shows real output.

Each block runs in a fresh sqlite3 shell on a new database file from
the repository root, as the README tells the reader to (`sqlite3 -cmd
'.load ./dprl'`): dprl is loaded first unless the block loads it itself,
and `.load ./dprl` is pointed at the build under test (DPRL_SO).  There is
no other fixture: a block creates its tables, or reads a file of the
repository (`.read samples/clinic.sql`).  Blocks that are not SQL for the
shell (commands, Python, JavaScript, C) must be fenced with their own
language.

Output shown in a block, as comment lines right after a statement whose
first line starts with "{" or "[" (`-- {"mechanism": ...}`), must be the
complete JSON the statement returns: exactly, for deterministic results;
for a private (noisy) result, the same keys in the same order, the same
public scalars and arrays of the same lengths (the noise differs at every
call).  So an elided output (`[3 numbers]`, `...`) fails, and so does a
stale one.  Every "delta" in the options of a code block is at most 1e-5.
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

from harness import SO, check, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # no docs/__pycache__ in the tree
sys.path.insert(0, os.path.join(ROOT, "docs"))
import gen_reference  # noqa: E402  (its statement splitter)

SQLITE3 = os.environ.get("SQLITE3", "sqlite3")
README = os.path.join(ROOT, "README.md")
GUIDES = sorted(os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
                if f.endswith(".md") and f != "reference.in.md")
DOCS = [README] + GUIDES
README_MAX = 15 * 1024  # a README read in minutes; the depth is in docs/


def code_blocks(text):
    """(first line number, language, body) of each fenced block."""
    out, lang, start, body = [], None, 0, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if lang is None:
                lang, start, body = line[3:].strip(), n + 1, []
            else:
                out.append((start, lang, "\n".join(body) + "\n"))
                lang = None
        elif lang is not None:
            body.append(line)
    return out


def statements_with_output(body):
    """[(statement, shown output or None)]: the output shown is the run of
    comment lines right after the statement (no blank line between), if its
    first line starts with { or [."""
    result, buf, after = [], "", None
    for line in body.splitlines():
        if not buf.strip():
            if line.startswith("--"):
                if after is not None:
                    after.append(line[2:].strip())
                continue
            if not line.strip():
                after = None
                continue
            if line.startswith("."):
                result.append((line.strip(), []))
                after = None
                continue
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            result += [(st, []) for st in gen_reference.statements(buf)]
            after, buf = result[-1][1], ""
    return [(st, shown if shown and shown[0][:1] in "{[" else None) for st, shown in result]


MARK = "@@dprl-readme-statement@@"


def run_block(body):
    """Run the block in the shell; (ok, error text, [output of each statement])."""
    so = os.path.abspath(SO)
    stmts = statements_with_output(body)
    lines = [".bail on"]
    if not any(st.startswith(".load") for st, _ in stmts):
        lines.append(f".load {so}")
    for st, _ in stmts:
        if st.split()[:2] == [".load", "./dprl"]:
            st = f".load {so}"
        lines += [st, f".print {MARK}"]
    with tempfile.TemporaryDirectory() as d:  # a file: a budget lives with its data
        p = subprocess.run([SQLITE3, os.path.join(d, "study.db")], input="\n".join(lines) + "\n",
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    outs = p.stdout.split(MARK + "\n")
    ok = p.returncode == 0 and len(outs) == len(stmts) + 1
    return ok, p.stderr.strip() or f"exit status {p.returncode}", stmts, outs


def same_shape(got, want, path=""):
    """None if got matches want as a noisy release may; else what differs."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or list(got) != list(want):
            return f"{path or 'result'}: keys {list(got) if isinstance(got, dict) else got!r}, " \
                   f"shown {list(want)}"
        for k in want:
            d = same_shape(got[k], want[k], f"{path}.{k}" if path else k)
            if d:
                return d
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{path}: {got!r} is not an array of {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            if isinstance(w, (list, dict)):
                d = same_shape(g, w, f"{path}[{i}]")
                if d:
                    return d
        return None
    return None if got == want else f"{path}: got {got!r}, shown {want!r}"


def check_output(where, stmt, got_text, shown):
    try:
        want = json.loads(" ".join(shown))
    except ValueError as e:
        check(False, f"{where}: the output shown after {stmt.split()[0]} ... is complete JSON",
              f"{e}\n{' '.join(shown)[:300]}")
        return
    try:
        got = json.loads(got_text)
    except ValueError:
        check(False, f"{where}: the statement returns the JSON shown", got_text[:300])
        return
    noisy = isinstance(got, dict) and got.get("private") is True
    diff = same_shape(got, want) if noisy else (None if got == want else
                                                f"got   {got_text.strip()[:600]}")
    kind = "a noisy release: same keys, public values and lengths" if noisy else "exactly"
    check(diff is None, f"{where}: the output shown is what the statement returns ({kind})",
          diff or "")


def test_sql_blocks():
    total = 0
    for doc in DOCS:
        name = os.path.relpath(doc, ROOT)
        text = open(doc, encoding="utf-8").read()
        blocks = [b for b in code_blocks(text) if b[1] == "sql"]
        total += len(blocks)
        run_blocks(name, blocks)
    check(total >= 8, "README.md and the guides have their sql blocks", f"found {total}")


def run_blocks(name, blocks):
    for start, _, body in blocks:
        where = f"{name}:{start}"
        ok, err, stmts, outs = run_block(body)
        check(ok, f"{where}: the sql block runs as pasted in the sqlite3 shell", err)
        if not ok:
            continue
        for (st, shown), got in zip(stmts, outs):
            if shown is not None:
                check_output(where, st, got, shown)


def test_realistic_delta():
    for doc in DOCS:
        text = open(doc, encoding="utf-8").read()
        for start, lang, body in code_blocks(text):
            deltas = re.findall(r'"delta":\s*([-+0-9.eE]+)', body)
            if deltas:
                check(all(float(d) <= 1e-5 for d in deltas),
                      f"{os.path.relpath(doc, ROOT)}:{start}: the {lang or 'plain'} block uses "
                      "realistic deltas (<= 1e-5)", f"got delta {', '.join(deltas)}")


def test_readme_short():
    size = os.path.getsize(README)
    check(size <= README_MAX, f"README.md is at most {README_MAX} bytes (the depth is in docs/)",
          size)
    text = open(README, encoding="utf-8").read()
    linked = [g for g in GUIDES if os.path.relpath(g, ROOT) in text]
    for g in GUIDES:
        rel = os.path.relpath(g, ROOT)
        via = [os.path.relpath(h, ROOT) for h in linked
               if f"]({os.path.basename(g)})" in open(h, encoding="utf-8").read()]
        check(g in linked or via, f"README.md links the guide {rel}, or a guide it links does",
              "linked from neither")


def test_sample_csv():
    """samples/icu.csv is the first 2,000 patients of samples/clinic.sql."""
    con = sqlite3.connect(":memory:")
    with open(os.path.join(ROOT, "samples", "clinic.sql")) as f:
        con.executescript(f.read())
    want = ["episode,t,state,action,reward,expert"] + [
        f"{e},{t},{s},{a},{r!r},{x}" for e, t, s, a, r, x in con.execute(
            "SELECT episode, t, state, action, reward, expert FROM steps WHERE episode <= 2000 "
            "ORDER BY episode, t")]
    got = open(os.path.join(ROOT, "samples", "icu.csv"), encoding="utf-8").read().splitlines()
    check(got == want, "samples/icu.csv is clinic.sql's first 2,000 patients", len(got))


def test_links():
    """Relative links of the docs resolve; the papers are cited, not linked
    (they are not in the repository)."""
    for doc in ["README.md", "REFERENCE.md", "ARCHITECTURE.md", os.path.join("ext", "ALGORITHMS.md")] + \
            [os.path.relpath(g, ROOT) for g in GUIDES]:
        text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
        base = os.path.dirname(os.path.join(ROOT, doc))
        links = re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", text)
        missing = [l for l in links if not os.path.exists(os.path.join(base, l))]
        check(not missing, f"{doc}: every relative link points to a file of the repository",
              f"missing: {missing}")
        check("`papers/`" not in text and "](papers" not in text,
              f"{doc}: no link to a papers/ folder (not in the repository)")


def test_checker():
    """The comparison itself: elided, stale and reordered outputs fail."""
    seeded = '{"mechanism":"dp_lsw","private":true,"epsilon":1,"theta":[1,2],"values":[3,4]}'
    check(same_shape(json.loads(seeded), json.loads(
        '{"mechanism":"dp_lsw","private":true,"epsilon":1,"theta":[5,6],"values":[7,8]}')) is None,
        "checker: a noisy release matches another draw of the same shape")
    for bad in ['{"mechanism":"dp_lsw","private":true,"epsilon":2,"theta":[1,2],"values":[3,4]}',
                '{"mechanism":"dp_lsw","private":true,"epsilon":1,"theta":[1],"values":[3,4]}',
                '{"mechanism":"dp_lsw","private":true,"theta":[1,2],"epsilon":1,"values":[3,4]}',
                '{"mechanism":"dp_lsw","private":true,"epsilon":1,"theta":[1,2]}']:
        check(same_shape(json.loads(seeded), json.loads(bad)) is not None,
              f"checker: {bad[30:70]}... does not match")
    body = "SELECT 1;\n-- {\"a\": [3 numbers]}\n\n-- prose\nSELECT 2;\n"
    st = statements_with_output(body)
    check(st == [("SELECT 1;", ['{"a": [3 numbers]}']), ("SELECT 2;", None)],
          "checker: output comments are attached to their statement, prose is not", st)


run([test_checker, test_links, test_realistic_delta, test_readme_short, test_sample_csv,
     test_sql_blocks])
