"""README's "What is proved" box says, per paper result, what the default `attnsim verify` shows:
its default column must agree with the scope the verify harness computes (``scope_by_result``,
``scope_summary``) over every default obligation, each assumed to come out as its method can at
best (proved, or passed for a sampled check; kernel rows with the label they earn).  A box that
claims "all sizes" or "kernel-checked" where the harness would not (or leaves out a result the
catalogue registers) fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnsim import catalog
from attnsim.constructions import kernel
from attnsim.constructions.kernel_theorems import THEOREMS
from attnsim.proofs import registry
from attnsim.proofs.obligation import KernelFacts, Obligation, Outcome, Result
from attnsim.universal import kernel_stages
from attnsim.verify.scope import scope_by_result, scope_summary

README = Path(__file__).resolve().parents[1] / "README.md"

# README row -> the paper results (``paper_ref``) of the catalogue it stands for
ROWS: dict[str, tuple[str, ...]] = {
    "Proposition 1 (token layout)": ("Proposition 1",),
    "Lemma: transpose, matmul": ("Lemma (transpose)", "Lemma (matmul)", "Lemma (matmul), Lemma (transpose)"),
    "Lemma 3: softmax (and masked)": ("Lemma 3 (softmax)",),
    "ReLU, MaxMin": ("Activation ReLU", "Activation MaxMin (GroupSort, groups of 2)"),
    "inverse, determinant 3 x 3": ("Lemma (inverse, determinant: 3x3 fixed order)",),
    "det(n), inverse(n) (ours)": (
        "Lemma (inverse, determinant) generalized to n x n (Faddeev-LeVerrier; beyond the paper)",
        "det(n) / inverse(n) by Faddeev-LeVerrier (beyond the paper): its steps",
    ),
    "Theorem 6, Corollary 6.1": (
        "Theorem 6",
        "Corollary 6.1",
        "Theorem 6: U's layout and stages (scores, attention, ffn, act, output, write)",
    ),
    "Theorem 9 / Corollary 9.1 (multi-head)": ("Theorem 9 / Corollary 9.1",),
    "hierarchy (N simulates every n <= N)": ("hierarchy (N >= n)",),
    "depth by looping (ours)": ("stacks (depth by looping)",),
    "Match2": ("Application (Match2)",),
    "k-PARITY": ("Application (k-PARITY)",),
    "Lipschitz approximation": ("Application (approximation of Lipschitz functions)",),
    "linear attention, Linformer": (
        "Application (linear attention; Katharopoulos et al. 2020)",
        "Application (Linformer; Wang et al. 2020)",
    ),
    "compile to weights (ours)": (
        "executable extraction (compiled U): Theorem 6, Corollary 6.1, Theorem 9, hierarchy",
        "executable extraction (compiled U): stacks",
        "executable extraction: concrete weights for every construction",
    ),
}
# rows of the box no obligation backs, and results the box leaves to another page
NOT_FROM_VERIFY = {"Figure 2": "drawn by `attnsim report`"}
NOT_IN_BOX = {"Definition (GAHAT-RASP semantics)": "the language itself: docs/semantics.md"}
# results only our prover's second route backs: in the default run only where coqc is missing
SECOND_ROUTE = {"Theorem 6: U's layout and stages (scores, attention, ffn, act, output, write)"}
PROOF_METHODS = {"all-sizes", "kernel", "z3-bounded", "sympy", "z3-parametric", "z3-instance"}


def box() -> dict[str, str]:
    """README's rows: paper result -> its default-run column."""
    text = README.read_text(encoding="utf-8").split("## What is proved", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    return {cells[0].strip(): cells[1].strip() for cells in rows[1:]}


def _best(ob: Obligation, earns: dict[str, KernelFacts]) -> Result:
    """``ob``'s row when it comes out as well as its method can: proved (passed, if sampled)."""
    return Result.of(ob, Outcome(True, "assumed for the box", kernel=earns.get(ob.id)), 0.0)


@pytest.fixture(scope="module")
def scopes() -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """(paper result -> scope, construction -> scope, construction -> its paper results) of a default run
    in which everything comes out as well as it can."""
    catalog.load()
    obs = registry.select(None)
    earns = {
        f"{t.construction}/kernel/{t.theory}": KernelFacts(t.theorem_names, (), kernel.covers_registered(t), t.sizes)
        for t in THEOREMS
    } | {  # U's stages in the kernel: the whole construction only for U's whole layer (Theorem 6) and stacks
        ob.id: KernelFacts(s.theorem_names, (), s.whole, s.sizes)
        for ob in kernel_stages.universal_kernel_obligations()
        for s in kernel_stages.STAGES
        if ob.id.split("/")[2] == s.theory
    }
    rs = [_best(ob, earns) for ob in obs]
    assert {r.status for r in rs} <= {"proved", "passed"}
    assert {ob.id for ob in obs if ob.method == "kernel"} <= set(earns)
    by_ref = {ref: scope for ref, scope, _ in scope_by_result(rs)}
    by_con = {name: scope for name, scope, _ in scope_summary(rs)}
    # a construction stands for the paper results of its kernel rows when it has one, else its last row's
    ref_of: dict[str, set[str]] = {r.construction: {r.paper_ref} for r in rs}
    for r in rs:
        if r.method == "kernel" and r.kernel and r.kernel.registered:
            ref_of[r.construction] = set()
    for r in rs:
        if r.method == "kernel" and r.kernel and r.kernel.registered:
            ref_of[r.construction].add(r.paper_ref)
    return by_ref, by_con, ref_of


def test_the_box_names_every_paper_result_the_catalogue_registers(
    scopes: tuple[dict[str, str], dict[str, str], dict[str, set[str]]],
) -> None:
    by_ref, _, _ = scopes
    mapped = {ref for refs in ROWS.values() for ref in refs}
    ran = set(by_ref) - set(NOT_IN_BOX)
    assert ran <= mapped and mapped - ran <= SECOND_ROUTE, (
        "a paper result is missing from ROWS (or ROWS names a gone one)"
    )
    assert set(box()) == set(ROWS) | set(NOT_FROM_VERIFY)


@pytest.mark.parametrize("row", sorted(ROWS))
def test_a_row_claims_all_sizes_and_kernel_checked_only_as_verify_computes_them(
    row: str, scopes: tuple[dict[str, str], dict[str, str], dict[str, set[str]]]
) -> None:
    """ "all sizes" leads the row exactly when every result behind it is all sizes; "kernel-checked"
    is in the row exactly when a construction behind it earns the label; "bounded" / "instance" /
    "sampled" lead a row that is not all sizes, as verify's weaker scopes say."""
    by_ref, by_con, ref_of = scopes
    said = box()[row]
    refs = tuple(r for r in ROWS[row] if r in by_ref)
    all_sizes = all(by_ref[r] == "all sizes" for r in refs)
    assert said.startswith("all sizes") == all_sizes, (row, said, {r: by_ref[r] for r in refs})
    kernel_label = any("kernel-checked" in s for c, s in by_con.items() if ref_of[c] & set(refs))
    assert ("kernel-checked" in said) == kernel_label, (row, said)
    if not all_sizes:
        weaker = {s for c, s in by_con.items() if ref_of[c] & set(refs) and not s.startswith("all sizes")}
        words = {"bounded": "bounded", "fixed size": "instance", "fixed instances": "instance", "sampled": "sampled"}
        expected = {w for key, w in words.items() if any(s.startswith(key) for s in weaker)}
        assert (
            any(re.search(rf"\b{w}\b", said) for w in expected)
            or said.startswith("not all sizes")
            or ("all sizes" in said and not said.startswith("all sizes"))
        ), (row, said, weaker)
