"""A caller's text in dprl's messages is shown escaped: the message is
valid UTF-8 with no control character, whatever bytes the caller gave.
A curly quote, a BOM, an 'é' or a NUL at the JSON reader's error position
is shown as U+XXXX, a byte that begins no UTF-8 sequence as \\xNN, and a
name cut to its length in a message is cut at a character's boundary or
escaped.  A message that does not decode would raise UnicodeDecodeError in
Python, which escapes every `except sqlite3.Error`.
"""
import sqlite3

from harness import check, connect, run


def message(con, sql, arg):
    """The error of sql with arg bound, as (kind, text)."""
    try:
        con.execute(sql, (arg,)).fetchall()
        return "none", ""
    except sqlite3.Error as e:
        return "sqlite3.Error", str(e)
    except UnicodeDecodeError as e:
        return "UnicodeDecodeError", str(e)


def valid(text):
    return all(ord(c) >= 0x20 and not 0x7F <= ord(c) < 0xA0 for c in text)


PLAN = "SELECT dp_plan(CAST(? AS TEXT))"
LSW = ("SELECT dp_lsw(episode, t, state, reward, CAST(? AS TEXT)) FROM "
       "(SELECT 1 AS episode, 0 AS t, 0 AS state, 1.0 AS reward)")


def test_messages():
    con = connect()
    cases = [
        ("a curly quote", PLAN, '{"n_states": 3,\u201c'.encode(), "got U+201C"),
        ("a BOM", PLAN, '\ufeff{"n_states": 3}'.encode(), "got U+FEFF"),
        ("an é", LSW, '{"n_states": 3, é}'.encode(), "got U+00E9"),
        ("a NUL", PLAN, b'{"n_states": 3\x00}', "got U+0000"),
        ("a lone continuation byte", PLAN, b'{"n_states": 3,\x80}', "got \\x80"),
        ("a cut sequence", PLAN, b'{"n_states": 3,\xe2\x80', "got \\xE2"),
        ("an invalid byte in a key", PLAN, b'{"x\xff": 1}', '"x\\xFF"'),
        ("a control character in a key", PLAN, b'{"a\\u0007b": 1}', '"a\\x07b"'),
        ("a long key of é, cut", PLAN, ('{"' + "é" * 40 + '": 1}').encode(), "unknown option"),
        ("an é in a key, kept", PLAN, '{"n_sté": 3}'.encode(), '"n_sté"'),
    ]
    for name, sql, arg, want in cases:
        kind, text = message(con, sql, arg)
        check(kind == "sqlite3.Error" and want in text and valid(text),
              f"{name}: sqlite3.Error, valid UTF-8, showing {want}", f"{kind}: {text!r}")


run([test_messages])
