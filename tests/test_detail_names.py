"""The names a proof's detail prints are explained (docs/proofs.md, "Names in a detail").

Proofs name the variables they make up with a ``!`` (no size name may contain one): the output
coordinates ``o!i``, a specification's sum variables ``s!0``, a selector's ``q!`` and ``k!``...;
an unlabelled node prints as ``select_13``.  Every name-making string in the package, and every
such name in the details of representative proofs (all-sizes, z3-parametric, a refutation), must
be in the page's tables.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

import attnsim

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(attnsim.__file__).parent


def _section() -> str:
    text = (ROOT / "docs" / "proofs.md").read_text(encoding="utf-8")
    start = text.index("## Names in a detail")
    return text[start : text.index("\n## ", start + 1)]


def _documented() -> set[str]:
    """The names the section's tables give, in backticks: `o!i`, `q!N`, `NAME!u`, `AXIS_rep!`..."""
    return set(re.findall(r"`([^`\s]+)`", _section()))


def _name_makers() -> dict[str, set[str]]:
    """Every string constant of the package that makes a ``!`` name (a whole name such as
    ``"q!"``, or the literal part of an f-string such as ``f"mono!{k}"``): text -> files."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                v = node.value
                if re.fullmatch(r"[A-Za-z_0-9]*![a-z]*", v) and v != "!":
                    found.setdefault(v, set()).add(str(path.relative_to(PACKAGE.parent)))
    return found


def _covered(maker: str, documented: set[str]) -> bool:
    """A maker is documented when a documented name starts with it (``q!`` by ``q!N``), or, for
    the tail of an f-string (``!u`` of ``f"{name}!u"``, ``_rep!`` of ``f"{axis}_rep!"``), ends with it
    (``NAME!u``, ``AXIS_rep!``)."""
    if maker.startswith(("!", "_")):
        return any(d.endswith(maker) for d in documented)
    return any(d == maker or d.startswith(maker) for d in documented)


def test_every_name_the_code_makes_is_explained() -> None:
    documented = _documented()
    makers = _name_makers()
    assert {"q!", "k!", "s!", "l!", "mono!"} <= set(makers), sorted(makers)  # the scan finds them
    missing = {m: sorted(f) for m, f in makers.items() if not _covered(m, documented)}
    assert not missing, missing


NAME = re.compile(r"(?<![\w!])[A-Za-z_][\w]*![\w!']*|[βμα]\d+|\b[a-z]+_\d+\b")


def _form(name: str) -> str:
    """A printed name as the table gives it: digits as N, a hash as its prefix alone."""
    if name.startswith("l!"):
        return "l!"
    if re.fullmatch(r"\w+![uvw]", name):  # a scalar input's offsets: NAME!u, NAME!v, NAME!w
        return "NAME!" + name[-1]
    m = re.fullmatch(r"([βμα])\d+", name)
    if m:
        return m.group(1) + "0"
    return re.sub(r"\d+$", "N", name)


def _details() -> list[str]:
    """Details of representative proofs: all-sizes (transpose, matmul), Z3 selector intents, and
    the tutorial's refuted transpose (a counterexample on an unlabelled selector)."""
    from attnsim import lemmas
    from attnsim.proofs.intents import check_intent
    from attnsim.rasp import core as C
    from attnsim.symbolic.program_equals_spec import prove_program_equals_spec

    out = []
    t = lemmas.transpose(C.Size("rows"), C.Size("cols"))
    m = lemmas.matmul(C.Size("rows"), C.Size("inner"), C.Size("cols"))
    out += [prove_program_equals_spec(t).detail, prove_program_equals_spec(m).detail]
    out += [check_intent(it, m.layout).detail for it in m.intents]
    a_blk, blk = t.layout.blocks

    def wrong_source(p: Any) -> Any:
        h, i, j = blk.coords(p)
        return a_blk.position(j, i, h) + 1

    wrong = C.aggregate(C.select(C.indices, C.imap(wrong_source, C.indices), "=="), C.tokens).named("out")
    out.append(prove_program_equals_spec(dataclasses.replace(t, program=wrong)).detail)
    return out


def test_the_names_in_proof_details_are_explained() -> None:
    details = _details()
    names = {n for d in details for n in NAME.findall(d)}
    assert {"o!i", "s!0", "q!", "k!"} <= names and any(n.startswith("select_") for n in names), sorted(names)
    documented = {_form(d) if d != "select_13" else "select_N" for d in _documented()}
    sizes = {"rows", "cols", "inner", "heads"}
    unexplained = {n for n in names if _form(n) not in documented and n not in sizes}
    assert not unexplained, sorted(unexplained)
