"""Write a Coq development tree for the kernel theories and U's stages: the hand-written files and
the generated ones (Exports.v, U's node libraries <Stage>Nodes.v, <Theory>Statement.v,
<Theory>Gate.v) with a _CoqProject, so that a theory can be edited and compiled by hand
(``coq_makefile -f _CoqProject -o Makefile && make``).

Usage: python tools/coq_dev.py DEST
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from attnsim.constructions.kernel import THEOREMS, KernelTheorem, coq_sources, kernel_files
from attnsim.universal.kernel_stages import STAGES
from attnsim.universal.kernel_stages import files as stage_files

SKELETON = """From mathcomp Require Import all_ssreflect all_algebra.
From Coq Require Import ZArith Lia.
From mathcomp Require Import zify.
From Attnsim Require Import Semantics Lemmas Exports {theory}Statement.
Import GRing.Theory Num.Theory.

{theorems}"""


def _skeleton(thm: KernelTheorem) -> str:
    body = "".join(f"Theorem {t} : {t}_statement.\nProof.\nAdmitted.\n\n" for t in thm.theorem_names)
    return SKELETON.format(theory=thm.theory, theorems=body)


def main(dest: str) -> None:
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    src = coq_sources()
    order: list[str] = []
    for thm in THEOREMS:
        if not (src / f"{thm.theory}.v").is_file():
            (src / f"{thm.theory}.v").write_text(_skeleton(thm))
            print(f"wrote a skeleton {src / thm.theory}.v (its proofs Admitted)")
        for f in kernel_files(thm):
            (out / f"{f.name}.v").write_text(f.text)
            if f.name not in order:
                order.append(f.name)
    for stage in STAGES:
        for f in stage_files(stage=stage):
            (out / f"{f.name}.v").write_text(f.text)
            if f.name not in order:
                order.append(f.name)
    for v in coq_sources().glob("*.v"):  # theories not (yet) listed in THEOREMS
        if not (out / v.name).exists():
            shutil.copy(v, out / v.name)
    (out / "_CoqProject").write_text("-Q . Attnsim\n" + "".join(f"{n}.v\n" for n in order))
    theories = ", ".join([*(t.theory for t in THEOREMS), *(s.theory for s in STAGES)])
    print(f"wrote {len(order)} files to {out}; theories: {theories}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
