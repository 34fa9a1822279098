#!/usr/bin/env python3
"""Module cycles in the workspace's crates: pairs (and larger rings) of modules that each
use the other, counted on `crate::` and `super::` paths in code (comments and doc links
excluded). A module and the modules nested in it are one family, not a cycle; a use from deep
inside one module of another counts between the two sibling modules that hold them.

    ./scripts/module-cycles.py          # prints each cycle, then the count
"""
import os
import re
import sys

ROOTS = ["src", "lib/src", "launcher/src", "db/src", "hostlist/src", "histories/src"]
PATH = re.compile(r"\b(crate|super)((?:::\w+)+|::\{[^}]*\})")


def modules(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)[:-3]
            if rel.endswith("/mod") or rel == "mod":
                rel = rel[: -len("/mod")] if "/" in rel else ""
            if rel in ("lib", "main"):
                rel = ""
            out[rel] = os.path.join(d, f)
    return out


def resolve(mods, base, parts):
    """The deepest module `base`/`parts` names."""
    best = base
    cur = base
    for p in parts:
        cur = f"{cur}/{p}" if cur else p
        if cur in mods:
            best = cur
        else:
            break
    return best


def targets(mods, mod, text):
    code = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))
    for kind, rest in PATH.findall(code):
        groups = []
        if rest.startswith("::{"):
            groups = [g.strip().split("::") for g in rest[3:-1].split(",") if g.strip()]
        else:
            groups = [rest[2:].split("::")]
        for parts in groups:
            parts = [p for p in parts if p and p != "self"]
            if kind == "crate":
                yield resolve(mods, "", parts)
            else:
                parent = mod.rsplit("/", 1)[0] if "/" in mod else ""
                yield resolve(mods, parent, parts)


def family(a, b):
    return a == b or a.startswith(b + "/") or b.startswith(a + "/") or a == "" or b == ""


def siblings(a, b):
    """`a` and `b` lifted to the two children of their nearest common ancestor (a use from
    deep inside one module of another counts between those two)."""
    pa, pb = a.split("/"), b.split("/")
    i = 0
    while i < min(len(pa), len(pb)) and pa[i] == pb[i]:
        i += 1
    return "/".join(pa[: i + 1]), "/".join(pb[: i + 1])


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    cycles = []
    for root in ROOTS:
        mods = modules(root)
        edges = {m: set() for m in mods}
        for m, path in mods.items():
            with open(path, encoding="utf-8") as f:
                for t in targets(mods, m, f.read()):
                    if not family(m, t):
                        a, b = siblings(m, t)
                        edges.setdefault(a, set()).add(b)
        for a in sorted(edges):
            for b in sorted(edges[a]):
                if a < b and a in edges.get(b, ()):
                    cycles.append(f"{root}: {a} <-> {b}")
    for c in cycles:
        print(c)
    print(f"{len(cycles)} module cycle(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
