#!/bin/sh
# The Python package (bindings/python), as a user gets it, offline:
#  1. the wheel built from this checkout with Debian's python3-build
#     (--no-isolation: no download of setuptools), as `make wheel` does;
#  2. installed with pip --no-index into a fresh venv, then used from a
#     fresh directory (tests/packaging/use_python.py): dprl.load, a release;
#  3. the same installed package with apsw (Debian's python3-apsw), the
#     README's answer for Pythons without enable_load_extension;
#  4. the sdist, which carries the C sources, built into a wheel away from
#     the repository (OPT=-O0 to keep this quick) and installed over the
#     first: dprl_debug() then says "commit unknown".
# Prints ok / not ok; needs `make deps` (python3-build, python3-venv, ...).
cd "$(dirname "$0")/../.."
root=$(pwd)
PY=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(sed -n 's/^#define DPRL_VERSION "\(.*\)"/\1/p' ext/dprl.h)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
whl=dprl-$version-py3-none-linux_x86_64.whl

say() { # say STATUS NAME [LOGFILE]: ok/not ok, with the log's tail on failure
  if [ "$1" -eq 0 ]; then echo "ok $2"; else
    echo "not ok $2"
    [ -n "${3:-}" ] && tail -15 "$3" | sed 's/^/#   /'
  fi
  return "$1"
}

$PY -m build --wheel --no-isolation --outdir "$tmp/dist" bindings/python >"$tmp/build.log" 2>&1
say $? "python3 -m build --wheel --no-isolation bindings/python (offline)" "$tmp/build.log"
[ -f "$tmp/dist/$whl" ]
say $? "the wheel is $whl (platform-specific, any Python 3)" || ls "$tmp/dist" | sed 's/^/#   /'
$PY - "$tmp/dist/$whl" <<'PYEOF'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
want = {"dprl/__init__.py", "dprl/_version.py", "dprl/dprl.so", "dprl/LICENSE"}
print(("ok" if want <= names else "not ok") + " the wheel holds dprl.so, the loader, the version and the LICENSE")
if not want <= names:
    print("#   missing", sorted(want - names))
PYEOF

$PY -m venv "$tmp/venv" >"$tmp/venv.log" 2>&1
say $? "python3 -m venv (fresh, no system site-packages)" "$tmp/venv.log"
"$tmp/venv/bin/pip" install --no-index --disable-pip-version-check "$tmp/dist/$whl" >"$tmp/pip.log" 2>&1
say $? "pip install --no-index $whl into the venv" "$tmp/pip.log"
site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')

# Use it from a directory that has nothing of the repository.
mkdir "$tmp/run"
cp tests/packaging/use_python.py "$tmp/run/"
(cd "$tmp/run" && "$tmp/venv/bin/python" use_python.py "$version" "$commit" "$site")

# apsw: Debian's python3 with the venv's site-packages on the path.
if $PY -c 'import apsw' 2>/dev/null; then
  (cd "$tmp/run" && PYTHONPATH="$site" $PY use_python.py "$version" "$commit" "$site" apsw)
else
  echo "not ok apsw is importable by $PY (python3-apsw, installed by make deps)"
fi

# The sdist: C sources inside, a wheel built from it outside any git tree.
$PY -m build --sdist --no-isolation --outdir "$tmp/sdist" bindings/python >"$tmp/sdist.log" 2>&1
say $? "python3 -m build --sdist --no-isolation bindings/python" "$tmp/sdist.log"
tar -tzf "$tmp/sdist/dprl-$version.tar.gz" >"$tmp/sdist.list" 2>&1
for f in csrc/Makefile csrc/ext/dprl.c csrc/ext/dprl.h LICENSE; do
  grep -qx "dprl-$version/$f" "$tmp/sdist.list"
  say $? "the sdist has $f"
done
mkdir "$tmp/away" && tar -xzf "$tmp/sdist/dprl-$version.tar.gz" -C "$tmp/away"
(cd "$tmp/away" && OPT=-O0 $PY -m build --wheel --no-isolation --outdir "$tmp/dist2" "dprl-$version") \
  >"$tmp/build2.log" 2>&1
say $? "a wheel from the sdist, away from the repository" "$tmp/build2.log"
"$tmp/venv/bin/pip" install --no-index --disable-pip-version-check --force-reinstall \
  "$tmp/dist2/$whl" >"$tmp/pip2.log" 2>&1
say $? "pip install --no-index that wheel over the first" "$tmp/pip2.log"
(cd "$tmp/run" && "$tmp/venv/bin/python" use_python.py "$version" unknown "$site" | sed 's/^\(not \)\{0,1\}ok /&[from the sdist] /')
exit 0
