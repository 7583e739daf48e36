#!/usr/bin/env python3
"""Writes testdata/jinja/cases/random_*.txtar: deterministic random
templates (fixed seed) that mix literals, operators, filters, tests,
methods, slicing, loops and whitespace control. jinja_oracle.py then fills
in Python's results, so the Go engine is checked against Jinja2 on
combinations nobody wrote by hand.

    python3 tools/oracle/jinja_random.py testdata/jinja/cases
    python3 tools/oracle/jinja_oracle.py testdata/jinja
"""

import json
import os
import random
import sys

VARS = {
    "s": "H\u00e9llo, W\u00f6rld! \U0001F600 <b>&</b>",
    "e": "",
    "n": None,
    "i": 7,
    "neg": -3,
    "big": 123456789012345678901234567890,
    "f": 2.5,
    "tiny": 1e-07,
    "huge": 2.5e20,
    "z": 0.0,
    "t": True,
    "no": False,
    "l": [3, 1, 2, 1],
    "ls": ["b", "A", "c", "a"],
    "mixed": [1, "a", None, 2.5, True, [1], {"k": "v"}],
    "d": {"b": 2, "a": 1, "C": 3},
    "users": [
        {"name": "Ann", "age": 31, "admin": True, "tags": ["x", "y"]},
        {"name": "bob", "age": 25, "admin": False, "tags": []},
        {"name": "Cy", "age": 40, "tags": ["z"]},
    ],
    "msg": {"role": "assistant", "content": "<think>\nplan\n</think>\n\nanswer  ", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1.0, "y": [None, "\u2028"]}}}]},
    "ws": "  a\tb \n c  ",
}

NAMES = list(VARS) + ["missing"]

STR_LITS = ["'abc'", "\"it's\"", "'a,b,,c'", "'\\n'", "'\u00e9\u00e8'", "''", "'  pad  '", "'X'", "'%s-%s'", "'{}|{}'"]
NUM_LITS = ["0", "1", "2", "-1", "3", "10", "1.5", "0.0", "-2.5", "1e3", "2**3"]
FILTERS_0 = ["length", "upper", "lower", "title", "capitalize", "trim", "string", "list", "first", "last",
             "tojson", "int", "float", "abs", "round", "unique|list", "sort", "reverse|list", "sum", "min", "max",
             "items|list", "dictsort", "wordcount", "e", "safe", "count", "join", "striptags"]
FILTERS_1 = ["default({})", "join({})", "replace({}, 'Z')", "indent({})", "batch({})|list", "center({})",
             "tojson(indent={})", "select({})|list", "reject({})|list", "map({})|list", "format({})",
             "selectattr({})|list", "rejectattr({})|list", "sort(attribute={})", "attr({})", "trim({})"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable",
         "sequence", "boolean", "true", "false", "odd", "even", "divisibleby(3)", "eq 1", "in [1, 'a']",
         "lower", "upper", "callable", "sameas none", "ne 2", "gt 1", "le 2"]
METHODS = ["strip()", "strip('!H ')", "lstrip()", "rstrip('\\n ')", "split()", "split(',')", "split(',', 1)",
           "rsplit(' ', 1)", "upper()", "lower()", "title()", "capitalize()", "startswith('H')",
           "endswith(' ')", "find('l')", "rfind('l')", "count('l')", "replace('l', 'L')", "splitlines()",
           "isdigit()", "isalpha()", "get('a')", "get('zz', 0)", "items()|list", "keys()|list",
           "values()|list", "index(1)", "join(['x', 'y'])", "format(1, 2)", "zfill(4)", "partition(',')"]
OPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or"]


def atom(r, depth):
    k = r.random()
    if k < 0.3:
        return r.choice(NAMES)
    if k < 0.45:
        return r.choice(STR_LITS)
    if k < 0.6:
        return r.choice(NUM_LITS)
    if k < 0.65:
        return r.choice(["none", "true", "false"])
    if k < 0.72 and depth > 0:
        return "[" + ", ".join(expr(r, depth - 1) for _ in range(r.randint(0, 3))) + "]"
    if k < 0.76 and depth > 0:
        return "{" + ", ".join("%s: %s" % (r.choice(STR_LITS[:3]), expr(r, depth - 1)) for _ in range(r.randint(0, 2))) + "}"
    if k < 0.8 and depth > 0:
        return "(" + expr(r, depth - 1) + ")"
    return r.choice(["users[0].name", "users[1]['tags']", "d.a", "msg.content", "msg.tool_calls[0].function.arguments",
                     "l[1:3]", "s[::-1]", "s[2]", "s[-3:]", "l[::2]", "mixed[-1]", "ls[-2]", "d['C']", "users.0.age"])


def postfix(r, e, depth):
    k = r.random()
    if k < 0.25:
        return "%s | %s" % (e, r.choice(FILTERS_0))
    if k < 0.4:
        f = r.choice(FILTERS_1)
        arg = r.choice(STR_LITS[:4] + NUM_LITS[:4] + ["'odd'", "'upper'", "'name'", "'admin'", "'age'", "true"])
        return "%s | %s" % (e, f.format(arg))
    if k < 0.55:
        return "%s is %s%s" % (e, r.choice(["", "not "]), r.choice(TESTS))
    if k < 0.7:
        return "%s.%s" % (e if e.replace("_", "").isalnum() else "(%s)" % e, r.choice(METHODS))
    if k < 0.75:
        return "%s[%s]" % (e if e.replace("_", "").isalnum() else "(%s)" % e, r.choice(["0", "-1", "1:", ":2", "::-1", "'a'", "'name'"]))
    return e


def expr(r, depth=2):
    e = postfix(r, atom(r, depth), depth)
    if depth > 0 and r.random() < 0.4:
        e = "%s %s %s" % (e, r.choice(OPS), postfix(r, atom(r, depth - 1), depth - 1))
    if depth > 0 and r.random() < 0.1:
        e = "%s if %s else %s" % (e, expr(r, depth - 1), expr(r, depth - 1))
    if r.random() < 0.1:
        e = "not " + e
    return e


def tag(r, body):
    a = r.choice(["", "-", "+"]) if r.random() < 0.4 else ""
    b = r.choice(["", "-"]) if r.random() < 0.4 else ""
    return "{%" + a + " " + body + " " + b + "%}"


def stmt(r, depth):
    k = r.random()
    sep = r.choice(["", "\n", "\n  ", "  ", " \n"])
    if k < 0.35 or depth == 0:
        dash = r.choice(["", "-"])
        return sep + "{{" + dash + " " + expr(r) + " " + r.choice(["", "-"]) + "}}" + r.choice(["", "|", "\n"])
    if k < 0.55:
        return sep + tag(r, "if " + expr(r, 1)) + block(r, depth - 1) + (tag(r, "else") + block(r, depth - 1) if r.random() < 0.5 else "") + tag(r, "endif")
    if k < 0.75:
        it = r.choice(["l", "ls", "users", "d", "s", "range(3)", "mixed", "d.items()", "users|selectattr('admin')", "missing"])
        tgt = "k, v" if it == "d.items()" else "x"
        body = block(r, depth - 1) + r.choice(["{{ loop.index }}", "{{ loop.first }}{{ loop.last }}", "{{ x }}", "{{ loop.revindex0 }}", ""])
        if r.random() < 0.2:
            body += tag(r, r.choice(["break", "continue"]))
        return sep + tag(r, "for %s in %s" % (tgt, it)) + body + (tag(r, "else") + "E" if r.random() < 0.2 else "") + tag(r, "endfor")
    if k < 0.9:
        return sep + tag(r, "set v = " + expr(r)) + "{{ v }}"
    return sep + r.choice(["{# note #}", "{#- strip -#}", "{% raw %}{{ raw }}{% endraw %}", "  \n", "text\n", "\t"])


def block(r, depth):
    return "".join(stmt(r, depth) for _ in range(r.randint(1, 3)))


def main():
    out = sys.argv[1]
    r = random.Random(20251129)
    per_file = 100
    for fileno in range(4):
        parts = []
        for n in range(per_file):
            src = block(r, 2)
            name = "r%03d" % (fileno * per_file + n)
            parts.append("-- %s.jinja --\n%s\n" % (name, src))
            parts.append("-- %s.json --\n%s\n" % (name, json.dumps(VARS, ensure_ascii=False)))
        with open(os.path.join(out, "random_%d.txtar" % fileno), "w", encoding="utf-8", newline="") as f:
            f.write("".join(parts))


if __name__ == "__main__":
    main()
