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


# Typed generator: expressions that are mostly valid, so that most cases
# compare outputs rather than error kinds.
S_ATOMS = ["s", "ws", "msg.content", "msg.role", "users[0].name", "users[1]['name']", "'abc'", "'  pad  '",
           "'a,b,,c'", "\"it's\"", "'\u00e9\u00e8 \U0001F600'", "e", "ls[0]", "'%s=%d'", "'Tab\\there'"]
S_POST = ["|upper", "|lower", "|trim", "|title", "|capitalize", "|replace('a', 'AA')", "|indent(2)", "|center(12)",
          ".strip()", ".lstrip(' a')", ".rstrip('\\n ')", ".upper()", ".title()", ".replace('l', '')", ".zfill(6)",
          "|e", "|string", "[1:]", "[::-1]", "[-2:]", "|reverse", "|wordcount|string", ".split(',')|join('+')",
          ".split()|join('_')", "|list|join('.')", ".capitalize()", ".splitlines()|join('/')", "|truncate_none if false else ''"]
N_ATOMS = ["i", "neg", "big", "f", "tiny", "huge", "z", "0", "1", "7", "-2", "2.5", "1e-05", "1e16", "0.1", "l[0]",
           "users[0].age", "d.a", "s|length", "l|sum", "l|max", "range(4)|sum", "true", "false"]
N_POST = ["|abs", "|round", "|round(2)", "|int", "|float", "|string", "|round(1, 'floor')", "|tojson", ""]
N_OPS = ["+", "-", "*", "/", "//", "%", "**"]
L_ATOMS = ["l", "ls", "mixed", "users", "[1, 2.0, 'x', none]", "range(5)", "s|list", "d|list", "d.items()|list",
           "msg.tool_calls", "[]", "(1, 'a')", "l + [9]", "ls * 2"]
L_POST = ["|sort", "|unique|list", "|reverse|list", "|first", "|last", "|length", "|tojson", "|string", "|list",
          "|batch(2)|list", "[1:]", "[::-1]", "|select('odd')|list", "|reject('none')|list", "|join(', ')",
          "|map('string')|list", "|map(attribute='name')|list", "|selectattr('admin')|list", "|tojson(indent=1)",
          "|tojson(sort_keys=true)", "|dictsort" , "|count"]
B_EXPR = ["x is {}", "{} in {}", "{} == {}", "{} < {}", "not {}", "{} and {}", "{} or {}"]


def typed(r, depth=2):
    k = r.random()
    if k < 0.35:
        e = r.choice(S_ATOMS)
        for _ in range(r.randint(0, 2)):
            e = "(%s)%s" % (e, r.choice(S_POST)) if r.random() < 0.5 else e + r.choice(S_POST)
        if depth and r.random() < 0.3:
            e = "%s %s %s" % (e, r.choice(["~", "+", "~"]), typed(r, depth - 1) if r.random() < 0.3 else r.choice(S_ATOMS))
        return e
    if k < 0.65:
        e = r.choice(N_ATOMS)
        if depth and r.random() < 0.6:
            op = r.choice(N_OPS)
            if op == "**":
                # Non-integral exponents go through libm pow (last-bit
                # differences) and negative bases give complex numbers.
                e = "(%s ** %s)" % (r.choice(["i", "f", "tiny", "2.5", "0.1", "7"]), r.choice(["0", "1", "2", "i", "-2"]))
            else:
                e = "(%s %s %s)" % (e, op, r.choice(N_ATOMS))
        return e + r.choice(N_POST)
    if k < 0.9:
        return r.choice(L_ATOMS) + r.choice(L_POST)
    a, b = r.choice(N_ATOMS + S_ATOMS), r.choice(N_ATOMS + L_ATOMS)
    return "(%s %s %s)" % (a, r.choice(["==", "!=", "in", "not in", "and", "or", "<"]), b)


def typed_stmt(r, depth):
    k = r.random()
    sep = r.choice(["", "\n", "\n  ", " "])
    if k < 0.45 or depth == 0:
        return sep + "{{" + r.choice(["", "-"]) + " " + typed(r) + " " + r.choice(["", "-"]) + "}}" + r.choice(["", ";", "\n"])
    if k < 0.6:
        return sep + tag(r, "if " + typed(r, 1)) + typed_block(r, depth - 1) + tag(r, "elif " + typed(r, 1)) + "EL" + tag(r, "else") + typed_block(r, depth - 1) + tag(r, "endif")
    if k < 0.8:
        it = r.choice(["l", "ls", "users", "d", "s", "range(3)", "mixed", "msg.tool_calls", "users|selectattr('admin')"])
        body = typed_block(r, depth - 1) + r.choice(["{{ loop.index }}", "{{ loop.previtem }}", "{{ x }}", "{{ loop.cycle('a', 'b') }}", "{{ loop.length - loop.index0 }}"])
        return sep + tag(r, "for x in %s" % it) + body + tag(r, "endfor")
    if k < 0.9:
        return sep + tag(r, "set ns.v = " + typed(r)) + "{{ ns.v }}"
    return sep + tag(r, "set v = " + typed(r)) + "{{ v | tojson }}"


def typed_block(r, depth):
    return "".join(typed_stmt(r, depth) for _ in range(r.randint(1, 3)))


# Whitespace generator: text with spaces, tabs and newlines around tags
# with every combination of "-", "+" and none, to check trim_blocks,
# lstrip_blocks and whitespace control.
WS_TEXT = ["", " ", "  ", "\t", "\n", "\n\n", " \n ", "a", "b c", "\n  x", "y\n", "\u3000", "\r\n", "\n\t\n"]


def ws_mark(r, allow_plus=True):
    return r.choice(["", "", "-", "+"] if allow_plus else ["", "", "-"])


def ws_piece(r, depth):
    k = r.random()
    t = r.choice(WS_TEXT) + r.choice(WS_TEXT)
    if k < 0.3:
        return t + "{{" + ws_mark(r, False) + " 'v' " + ws_mark(r, False) + "}}"
    if k < 0.45:
        return t + "{#" + ws_mark(r) + " c " + ws_mark(r) + "#}"
    if k < 0.55:
        return t + "{%" + ws_mark(r) + " set q = 1 " + ws_mark(r) + "%}"
    if k < 0.62:
        return t + "{%" + ws_mark(r) + " raw " + ws_mark(r, False) + "%}" + r.choice(WS_TEXT) + "{{ r }}" + r.choice(WS_TEXT) + "{%" + ws_mark(r) + " endraw " + ws_mark(r) + "%}"
    if k < 0.8 and depth:
        return (t + "{%" + ws_mark(r) + " if true " + ws_mark(r) + "%}" + ws_block(r, depth - 1) +
                "{%" + ws_mark(r) + " else " + ws_mark(r) + "%}no" + r.choice(WS_TEXT) +
                "{%" + ws_mark(r) + " endif " + ws_mark(r) + "%}")
    if depth:
        return (t + "{%" + ws_mark(r) + " for i in [1, 2] " + ws_mark(r) + "%}" + ws_block(r, depth - 1) +
                "{%" + ws_mark(r) + " endfor " + ws_mark(r) + "%}")
    return t


def ws_block(r, depth):
    return "".join(ws_piece(r, depth) for _ in range(r.randint(1, 4))) + r.choice(WS_TEXT)


# Feature generator: macros, call blocks, namespaces, loop variables,
# set/filter/with blocks and loop controls, composed so that most cases
# render.
F_VAL = ["x", "loop.index", "loop.index0 * 2", "loop.revindex", "ns.total", "ns.items | length", "a", "b",
         "(x | string) ~ '!'", "users[loop.index0 % 3].name", "kwargs | length", "varargs | length",
         "loop.previtem | default('-')", "loop.nextitem is defined", "loop.cycle('o', 'e')", "v | default('u')"]


def f_stmt(r, depth, in_loop, in_macro):
    k = r.random()
    pool = [v for v in F_VAL if (in_loop or "loop." not in v) and (in_macro or ("kwargs" not in v and "varargs" not in v))]
    if not in_loop:
        pool = [v for v in pool if v != "x" and "loop" not in v]
    if k < 0.3 or depth == 0:
        return "{{ " + r.choice(pool) + " }}" + r.choice(["", ";", "\n"])
    if k < 0.45:
        return ("{% for x in " + r.choice(["l", "ls", "range(3)", "users | map(attribute='name')", "'ab'", "l if a else []"]) +
                (" if x != 2" if r.random() < 0.2 else "") + " %}" + f_body(r, depth - 1, True, in_macro) +
                (("{% if loop.index == 2 %}{% " + r.choice(["break", "continue"]) + " %}{% endif %}") if r.random() < 0.3 else "") +
                ("{% else %}empty" if r.random() < 0.3 else "") + "{% endfor %}")
    if k < 0.55:
        return "{% set ns.total = ns.total + " + r.choice(["1", "(x | int if x is number else 1)" if in_loop else "2", "a"]) + " %}{% set ns.items = ns.items + [" + r.choice(pool) + "] %}"
    if k < 0.65:
        return "{% set v %}" + f_body(r, depth - 1, in_loop, in_macro) + "{% endset %}[{{ v | trim }}]"
    if k < 0.72:
        return "{% filter " + r.choice(["upper", "trim", "replace('a', 'A')", "indent(2)", "title"]) + " %}" + f_body(r, depth - 1, in_loop, in_macro) + "{% endfilter %}"
    if k < 0.8:
        return "{% with a = " + r.choice(["a + 1", "'w'", "[1, 2]"]) + " %}" + f_body(r, depth - 1, in_loop, in_macro) + "{% endwith %}{{ a }}"
    if k < 0.9:
        return "{{ m(" + r.choice(["", "1", "1, 2", "1, 2, 3", "b='B'", "1, z=5", "a"]) + ") }}"
    return "{% call(p) m2(" + r.choice(["'c'", "l", "a"]) + ") %}<{{ p }}" + ("|{{ x }}" if in_loop else "") + ">{% endcall %}"


def f_body(r, depth, in_loop, in_macro):
    return "".join(f_stmt(r, depth, in_loop, in_macro) for _ in range(r.randint(1, 3)))


def f_template(r):
    head = ("{% set ns = namespace(total=0, items=[]) %}{% set a = 1 %}"
            "{% macro m(a=0, b='b') %}(" + "".join(f_stmt(r, 1, False, True) for _ in range(2)) + "){% endmacro %}"
            "{% macro m2(v) %}{% for i in [v, v] %}{{ caller(i) }}{% endfor %}{% endmacro %}")
    return head + f_body(r, 3, False, False) + "|{{ ns.total }}|{{ ns.items }}"


def main():
    out = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0  # 0: the committed cases
    r = random.Random(20251129 + seed)
    per_file = 100
    for fileno in range(4):
        parts = []
        for n in range(per_file):
            src = block(r, 2)
            name = "r%03d" % (fileno * per_file + n)
            parts.append("-- %s.jinja --\n%s\n" % (name, src))
        parts.insert(0, "-- _vars.json --\n%s\n" % json.dumps(VARS, ensure_ascii=False))
        with open(os.path.join(out, "random_%d.txtar" % fileno), "w", encoding="utf-8", newline="") as f:
            f.write("".join(parts))
    r = random.Random(1129 + seed)
    for fileno in range(6):
        parts = []
        for n in range(per_file):
            src = "{% set ns = namespace(v=0) %}" + typed_block(r, 2)
            name = "t%03d" % (fileno * per_file + n)
            parts.append("-- %s.jinja --\n%s\n" % (name, src))
        parts.insert(0, "-- _vars.json --\n%s\n" % json.dumps(VARS, ensure_ascii=False))
        with open(os.path.join(out, "typed_%d.txtar" % fileno), "w", encoding="utf-8", newline="") as f:
            f.write("".join(parts))
    r = random.Random(555 + seed)
    parts = ["-- _vars.json --\n%s\n" % json.dumps(VARS, ensure_ascii=False)]
    for n in range(per_file * 2):
        parts.append("-- f%03d.jinja --\n%s\n" % (n, f_template(r)))
    with open(os.path.join(out, "features.txtar"), "w", encoding="utf-8", newline="") as f:
        f.write("".join(parts))
    r = random.Random(77 + seed)
    for fileno in range(2):
        parts = []
        for n in range(per_file):
            name = "w%03d" % (fileno * per_file + n)
            src = ws_block(r, 2)
            if "\n-- " in "\n" + src or src.startswith("-- "):
                continue
            parts.append("-- %s.jinja --\n%s\n" % (name, src))
        with open(os.path.join(out, "whitespace_%d.txtar" % fileno), "w", encoding="utf-8", newline="") as f:
            f.write("".join(parts))


if __name__ == "__main__":
    main()
