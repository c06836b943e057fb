"""dprl: differentially private RL evaluation inside SQLite.

This package ships the dprl SQLite extension (dprl.so) and loads it:

    import sqlite3
    import dprl

    con = sqlite3.connect("trajectories.db")
    dprl.load(con)
    print(con.execute("SELECT dprl_version()").fetchone()[0])

dprl.load accepts a connection of the standard sqlite3 module or of apsw;
dprl.path() is the library's file, for anything else that loads SQLite
extensions.  The functions themselves are documented in the project's
README.
"""
import os

try:
    from ._version import __version__
except ImportError:  # a source checkout, not an installed package
    __version__ = "unknown"

__all__ = ["load", "path", "__version__"]

_NO_LOAD_EXTENSION = (
    "dprl.load: this Python's sqlite3 module was built without loadable "
    "extension support (no enable_load_extension: the default of pyenv and "
    "other builds from source, and of the macOS system Python). Use apsw "
    "(dprl.load(apsw.Connection(...)) works the same), or Debian's "
    "/usr/bin/python3, or rebuild Python with "
    "PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions.")


def path():
    """The absolute path of dprl.so inside this package."""
    p = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dprl.so")
    if not os.path.isfile(p):
        raise FileNotFoundError(
            "dprl: %s is missing: this is a source checkout, not a built package "
            "(build the wheel with: python3 -m build --wheel --no-isolation "
            "bindings/python)" % p)
    return p


def _loader(con):
    """con's (enable, load) methods: sqlite3 and apsw >= 3.42 name them
    enable_load_extension / load_extension, older apsw enableloadextension /
    loadextension."""
    for enable, load in (("enable_load_extension", "load_extension"),
                         ("enableloadextension", "loadextension")):
        if callable(getattr(con, enable, None)) and callable(getattr(con, load, None)):
            return getattr(con, enable), getattr(con, load)
    return None


def load(con):
    """Load dprl into con (a sqlite3.Connection or an apsw.Connection).

    Extension loading is switched on only for the load and off again after,
    so SQL run on con later cannot load libraries with load_extension()."""
    methods = _loader(con)
    if methods is None:
        if hasattr(con, "execute") or hasattr(con, "cursor"):
            raise RuntimeError(_NO_LOAD_EXTENSION)
        raise TypeError("dprl.load: expected a sqlite3 or apsw connection, got %r"
                        % type(con).__name__)
    enable, load_extension = methods
    so = path()
    enable(True)
    try:
        load_extension(so)
    except Exception as e:
        if "cannot open shared object" in str(e):
            raise RuntimeError(
                "dprl.load: %s needs Debian's liblapacke and libopenblas at run time "
                "(apt-get install liblapacke libopenblas0): %s" % (so, e)) from e
        raise
    finally:
        enable(False)
