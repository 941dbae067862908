"""Theorem 6 in the kernel: U's export cut into per-stage node libraries (attnsim.universal.kernel_nodes).

The cut must keep the term Coq reads the one the Python program builds (every definition byte for
byte, each after the ones it reads), and must let a changed node leave the libraries and stages
before it compiled: a mutant of one stage does not rebuild the stage chain."""

from __future__ import annotations

import itertools
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnsim.proofs import coq_build as B
from attnsim.universal import kernel_export as KE
from attnsim.universal import kernel_nodes as KN
from attnsim.universal import kernel_stages as UK

needs_coq = pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not installed")


def _export(reads: list[list[int]]) -> str:
    """A synthetic export: node k reads the nodes ``reads[k]`` (all before it), some unlabelled."""
    out = []
    for k, rs in enumerate(reads):
        body = " ".join(f"(P_n{r} N)" for r in rs) or "Indices"
        out.append(f"(* {'Map' if k % 3 else f'label.{k}'} *)\nDefinition P_n{k} (N : Z) : sop :=\n  ({body}).\n\n")
    return "".join(out)


@st.composite
def exports(draw: st.DrawFn) -> tuple[str, list[list[str]]]:
    """An export of 1-12 nodes, each reading 0-3 earlier ones, and 0-4 parts each wanting 0-3 nodes
    (parts overlapping, repeating, wanting nothing or a node an earlier part already holds)."""
    n = draw(st.integers(1, 12))
    reads = [sorted(set(draw(st.lists(st.integers(0, k - 1), max_size=3)))) if k else [] for k in range(n)]
    names = [f"P_n{k}" for k in range(n)]
    wanted = draw(st.lists(st.lists(st.sampled_from(names), max_size=3), max_size=4))
    return _export(reads), wanted


@given(exports())
def test_the_parts_are_the_export_s_definitions_each_after_what_it_reads(case: tuple[str, list[list[str]]]) -> None:
    text, wanted = case
    parts = KN.partition(text, "P", wanted)
    defs = KN.nodes(text, "P")
    assert len(parts) == len(wanted)
    everyone = [n for p in parts for n in re.findall(r"^Definition (\S+) ", p, re.M)]
    assert len(set(everyone)) == len(everyone)  # no node twice
    held: set[str] = set()
    for part, names in zip(parts, wanted, strict=True):
        order = re.findall(r"^Definition (\S+) ", part, re.M)
        assert part == "".join(defs[n].text for n in defs if n in order)  # the export's order, byte for byte
        mine = set(order)
        assert all(defs[n].reads <= held | mine for n in mine)  # reads only its own part or earlier ones
        held |= mine
        assert set(names) <= held  # what the part's statements name is there


@given(exports(), st.data())
def test_a_changed_node_leaves_every_part_before_its_own_unchanged(
    case: tuple[str, list[list[str]]], data: st.DataObject
) -> None:
    text, wanted = case
    parts = KN.partition(text, "P", wanted)
    node = data.draw(st.sampled_from(sorted(KN.nodes(text, "P"))))
    changed = text.replace(f"Definition {node} (N : Z) : sop :=\n  (", f"Definition {node} (N : Z) : sop :=\n  (Neg ")
    after = KN.partition(changed, "P", wanted)
    first = next((k for k, p in enumerate(parts) if f"Definition {node} " in p), len(parts))
    assert after[:first] == parts[:first]
    assert after[first:] != parts[first:] or first == len(parts)


def test_a_name_the_export_does_not_define_is_refused() -> None:
    with pytest.raises(ValueError, match="defines no P_n7"):
        KN.partition(_export([[], [0]]), "P", [["P_n1", "P_n7"]])


def test_text_that_is_not_an_export_is_refused() -> None:
    with pytest.raises(ValueError, match="not an export of 'P'"):
        KN.nodes("Definition x := 1.\n", "P")
    with pytest.raises(ValueError, match="not an export of 'Q'"):
        KN.nodes(_export([[]]), "Q")


def test_us_stage_libraries_hold_each_of_us_nodes_the_stages_read_once() -> None:
    """FFN_OUT's build: 13 node libraries, each exporting the one before, holding together every
    node of U some stage's statement reaches, byte for byte, and no other."""
    libs = UK.node_libraries(stage=UK.FFN_OUT)
    assert [f.name for f in libs] == [f"{s.theory}Nodes" for s in UK.STAGES[: UK.STAGES.index(UK.FFN_OUT) + 1]]
    for prev, lib in itertools.pairwise(libs):
        assert lib.deps == ("Semantics", prev.name) and f"Require Export {prev.name}." in lib.text
    for v in ("compact", "shallow"):
        pre = KE.program_name(v)
        defs = KN.nodes(KE.export_universal(v).text, pre)
        held = [n for f in libs for n in re.findall(rf"^Definition ({pre}\S*) ", f.text, re.M)]
        assert len(held) == len(set(held)) and f"{pre}_out_R2" in held and f"{pre}_out_Y2" not in held
        assert all(defs[n].text in "".join(f.text for f in libs) for n in held)


@needs_coq
def test_a_mutant_of_one_stage_leaves_the_stages_before_it_compiled(tmp_path: Path) -> None:
    """d gathered from the header's pointer (a node LayerNorm 1's statistics read first): ROW_MEAN's
    node library and theory come from the cache; the library holding the node is compiled again
    and the stage reading it is refused."""
    tools = B.CoqTools.find()
    assert tools is not None
    assert B.build(UK.files(stage=UK.ROW_MEAN), tools, UK.COQ_BUDGET, tmp_path).failed is None
    export = KE.export_universal("shallow")
    assert "Definition U_shallow_d_source " in UK.node_libraries(stage=UK.ROW_STATS)[1].text
    m = re.search(r"^Definition U_shallow_d_source .*?\.\n", export.text, re.S | re.M)
    assert m is not None and m.group(0).count("(1)%Z) (0)%Z)") == 1
    text = export.text.replace(m.group(0), m.group(0).replace("(1)%Z) (0)%Z)", "(2)%Z) (0)%Z)"))
    bad = B.build(UK.files({"shallow": replace(export, text=text)}, UK.ROW_STATS), tools, UK.COQ_BUDGET, tmp_path)
    assert "UniversalRowMeanNodes" not in bad.compiled and "UniversalRowMean" not in bad.compiled
    assert "UniversalRowStatsNodes" in bad.compiled
    assert bad.failed is not None and bad.failed.name == "UniversalRowStats"
