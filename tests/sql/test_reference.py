"""REFERENCE.md is up to date: docs/gen_reference.py, run against this build
(DPRL_SO), writes exactly the committed file.

The generator runs every example of docs/reference.in.md and pastes its
output, runs every error example and pastes its message, and checks each
options table against the function's list of known options and each
result table against the keys or columns the function returns.  So a
changed message, option, key or seeded output makes this test fail until
`make docs` rewrites REFERENCE.md (and the change is committed); so does
anything in it that depends on time, the machine or unseeded noise.  The
second test makes sure the generator's checks do fail on a wrong table.
"""
import difflib
import os
import subprocess
import sys
import tempfile

from harness import SO, check, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # no docs/__pycache__ in the tree
sys.path.insert(0, os.path.join(ROOT, "docs"))
import gen_reference  # noqa: E402


def test_up_to_date():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "REFERENCE.md")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "docs", "gen_reference.py"),
                            "--so", os.path.abspath(SO), "--out", out],
                           capture_output=True, text=True, timeout=600)
        check(p.returncode == 0,
              "docs/gen_reference.py runs every example, error, option and key table",
              p.stderr)
        if p.returncode:
            return
        with open(out, encoding="utf-8") as f:
            new = f.read()
    with open(os.path.join(ROOT, "REFERENCE.md"), encoding="utf-8") as f:
        old = f.read()
    diff = list(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                     "REFERENCE.md (committed)", "REFERENCE.md (generated)"))
    check(not diff, "REFERENCE.md is what make docs writes for this build",
          "".join(diff[:80]) + "\n(run make docs and commit REFERENCE.md)")


def fails(template, needle, name):
    try:
        gen_reference.generate(template, os.path.abspath(SO))
    except gen_reference.DocError as e:
        return check(needle in str(e), name, f"failed, but with: {e}")
    return check(False, name, "the template was accepted")


def test_generator_checks():
    steps = ("```sql\nCREATE TABLE steps(episode, t, state, reward);\n"
             "INSERT INTO steps VALUES (1,0,0,1),(1,1,1,0);\n```\n")
    fails("## f\n```options\ncheck: SELECT * FROM dp_first_visit('SELECT 1', {})\n"
          "n_states | required | x\ngamma | required | x\nrmin | 0 | x\nrmax | 1 | x\n"
          "fmin | 0 | x\nfmax | 1 | x\n```\n", "undocumented ['max_states']",
          "generator: an options table missing an option is refused")
    fails("## f\n```options\ncheck: SELECT dp_q_calibrate({})\nepsilon | required | x\n"
          "budget | none | x\n```\n", "not options ['budget']",
          "generator: an options table with an option the function refuses is refused")
    fails("## f\n" + steps + "```keys\n@rows: SELECT * FROM dp_first_visit("
          "'SELECT * FROM steps', '{\"n_states\": 3, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1}')\n"
          "episode | rows | x\nstate | rows | x\nt_first | rows | x\n```\n",
          "undocumented ['first_visit_return', 'max_states', 'made_with']",
          "generator: a result table missing a column is refused")
    fails("## f\n```keys\n@plan: SELECT dp_plan('{\"n_states\": 1, \"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, "
          "\"epsilon\": 1, \"delta\": 1e-5, \"episodes\": 1, \"visits\": [1]}')\n"
          "mechanism | all | x\nseeded | all | x\n```\n", "absent ['seeded']",
          "generator: a result table with a key that is not returned is refused")
    fails("## f\n```errors\nnot an error | SELECT dprl_version()\n```\n", "did not fail",
          "generator: an error example that does not fail is refused")
    fails("## f\n```sql\nSELECT dp_plan('{}');\n```\n", "failed: dp_plan: option",
          "generator: an example that fails is refused")
    fails("## f\n```sql\n.shell ls\n```\n", "unsupported dot-command",
          "generator: a dot-command it cannot run is refused")
    text = gen_reference.generate("## f\n```sql\nSELECT dp_plan('{\"n_states\": 1, "
                                  "\"gamma\": 0.5, \"rmin\": 0, \"rmax\": 1, \"epsilon\": 1, \"delta\": 1e-5, "
                                  "\"episodes\": 1, \"visits\": [1]}') AS p;\n```\n",
                                  os.path.abspath(SO))
    check('"mechanism": "dp_lsw"' in text and '"rms_error":' in text,
          "generator: a JSON result is pasted in, indented", text[-400:])


run([test_generator_checks, test_up_to_date])
