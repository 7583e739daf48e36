#!/usr/bin/env python3
"""Jinja2 oracle for render/jinja: renders test cases with Python Jinja2
(3.1.x) configured exactly like transformers' chat-template environment
and writes the expected results next to the inputs.

Usage (from the repository root):

    python3 tools/oracle/jinja_oracle.py testdata/jinja

Inputs and outputs (all under the given directory):

  cases/*.txtar      sections "NAME.jinja" (template) and optional
                     "NAME.json" (context variables, a JSON object; a
                     "_vars.json" section is the default for the file).
                     The oracle rewrites each file, replacing any
                     "NAME.out" / "NAME.err" sections with fresh results.
  templates/*.jinja  real chat templates (data; see PROVENANCE.md).
  messages/*.json    context variable sets (messages, tools, ...).
  golden/TEMPLATE.txtar
                     for each template x message set: "SET.out" or
                     "SET.err" (written by the oracle).

Section convention: the writer appends exactly one "\n" to every section
body and the reader strips exactly one, so outputs without a trailing
newline stay exact. A ".err" body is "ExceptionClass: message".
JSON inputs are never re-serialized: the oracle only reads them.
"""

import datetime
import json
import os
import re
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

# Fixed clock for strftime_now; the Go tests use the same instant.
FIXED_NOW = datetime.datetime(2025, 3, 7, 14, 5, 9)


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} block, reduced to rendering its body
    (the real one also records assistant token spans)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(
            self.call_method("_render_body"), [], [], body
        ).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def make_env():
    # Mirrors transformers.utils.chat_template_utils._compile_jinja_template.
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(
            x,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[AssistantTracker, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_env()


def render(template, variables):
    try:
        out = ENV.from_string(template).render(**variables)
        return "out", out
    except Exception as e:  # every failure is an expected result
        msg = str(e).replace("\n", " ")
        return "err", "%s: %s" % (type(e).__name__, msg)


SECTION = re.compile(r"^-- (.+?) --$", re.M)


def read_txtar(path):
    with open(path, "r", encoding="utf-8", newline="") as f:
        data = f.read()
    sections = []
    marks = list(SECTION.finditer(data))
    for i, m in enumerate(marks):
        start = m.end() + 1
        end = marks[i + 1].start() if i + 1 < len(marks) else len(data)
        body = data[start:end]
        if body.endswith("\n"):
            body = body[:-1]
        sections.append((m.group(1), body))
    return sections


def write_txtar(path, sections):
    parts = []
    for name, body in sections:
        if SECTION.search(body):
            raise SystemExit("%s: section %s contains a txtar marker line" % (path, name))
        parts.append("-- %s --\n%s\n" % (name, body))
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(parts))


def do_cases(root):
    d = os.path.join(root, "cases")
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".txtar"):
            continue
        path = os.path.join(d, fn)
        inputs = [(n, b) for n, b in read_txtar(path) if not (n.endswith(".out") or n.endswith(".err"))]
        byname = dict(inputs)
        final = []
        for name, body in inputs:
            final.append((name, body))
            case, ext = os.path.splitext(name)
            if ext == ".jinja" and case + ".json" in byname:
                continue  # the result follows the vars section
            if ext == ".json":
                if case + ".jinja" not in byname:
                    continue
                template, variables = byname[case + ".jinja"], json.loads(body)
            elif ext == ".jinja":
                template, variables = body, json.loads(byname.get("_vars.json", "{}"))
            else:
                continue
            kind, res = render(template, variables)
            final.append((case + "." + kind, res))
        write_txtar(path, final)


def do_templates(root):
    tdir = os.path.join(root, "templates")
    mdir = os.path.join(root, "messages")
    sets = []
    for fn in sorted(os.listdir(mdir)):
        if fn.endswith(".json"):
            with open(os.path.join(mdir, fn), "r", encoding="utf-8") as f:
                sets.append((fn[: -len(".json")], json.load(f)))
    for fn in sorted(os.listdir(tdir)):
        if not fn.endswith(".jinja"):
            continue
        with open(os.path.join(tdir, fn), "r", encoding="utf-8", newline="") as f:
            template = f.read()
        sections = []
        for name, variables in sets:
            kind, res = render(template, variables)
            sections.append((name + "." + kind, res))
        write_txtar(os.path.join(root, "golden", fn[: -len(".jinja")] + ".txtar"), sections)


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: jinja_oracle.py testdata/jinja")
    if jinja2.__version__ != "3.1.6":
        print("warning: Jinja2 %s, goldens were made with 3.1.6" % jinja2.__version__, file=sys.stderr)
    root = sys.argv[1]
    do_cases(root)
    do_templates(root)


if __name__ == "__main__":
    main()
