"""Builds dprl.so with the project's Makefile and puts it in the package.

pyproject.toml has the metadata; this file only adds what setuptools cannot
say declaratively:
- the version, read from ext/dprl.h (DPRL_VERSION);
- build_py runs `make dprl.so` and copies the library next to __init__.py;
- the wheel is tagged py3-none-<platform>: it holds no Python extension
  module, only a shared library for this platform;
- sdist carries the C sources (csrc/: ext/ and the Makefile), so a wheel can
  be built from it away from the repository.
"""
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.dist import Distribution
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # wheel not installed: sdist only
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))


def source_dir():
    """Where ext/ and the Makefile are: csrc/ in an sdist, else the checkout."""
    for d in (os.path.join(HERE, "csrc"), os.path.normpath(os.path.join(HERE, "..", ".."))):
        if os.path.isfile(os.path.join(d, "Makefile")) and os.path.isfile(
                os.path.join(d, "ext", "dprl.h")):
            return d
    raise SystemExit(
        "dprl: cannot find the C sources (ext/ and the Makefile). Build from a "
        "dprl checkout: python3 -m build --wheel --no-isolation bindings/python")


def version():
    with open(os.path.join(source_dir(), "ext", "dprl.h")) as f:
        m = re.search(r'^#define DPRL_VERSION "([^"]+)"', f.read(), re.M)
    if not m:
        raise SystemExit("dprl: no DPRL_VERSION in ext/dprl.h")
    return m.group(1)


class build_py_with_so(build_py):
    def run(self):
        super().run()
        src = source_dir()
        # make checks the Debian packages it needs and says which are missing.
        subprocess.check_call(["make", "--no-print-directory", "-C", src, "all"])
        dst = os.path.join(self.build_lib, "dprl")
        self.mkpath(dst)
        shutil.copyfile(os.path.join(src, "dprl.so"), os.path.join(dst, "dprl.so"))
        shutil.copyfile(os.path.join(src, "LICENSE"), os.path.join(dst, "LICENSE"))
        with open(os.path.join(dst, "_version.py"), "w") as f:
            f.write('__version__ = "%s"\n' % version())


class sdist_with_c(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        src = source_dir()
        csrc = os.path.join(base_dir, "csrc")
        if os.path.abspath(src) != os.path.abspath(os.path.join(HERE, "csrc")):
            shutil.copytree(os.path.join(src, "ext"), os.path.join(csrc, "ext"),
                            ignore=shutil.ignore_patterns("*.o"))
            for name in ("Makefile", "LICENSE"):
                shutil.copyfile(os.path.join(src, name), os.path.join(csrc, name))
        shutil.copyfile(os.path.join(src, "LICENSE"), os.path.join(base_dir, "LICENSE"))


class BinaryDistribution(Distribution):
    """Platform-specific (dprl.so): installed to platlib, wheel not pure."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": build_py_with_so, "sdist": sdist_with_c}

if bdist_wheel is not None:
    class bdist_wheel_platform(bdist_wheel):
        def get_tag(self):
            return ("py3", "none", super().get_tag()[2])

    cmdclass["bdist_wheel"] = bdist_wheel_platform

setup(version=version(), cmdclass=cmdclass, distclass=BinaryDistribution)
