"""The Coq exporter (attnsim.proofs.coq): one printer over the program graph (issue 28, backs the
kernel-checked lemmas); refusals are one-line CoqExportErrors naming the node."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnsim.proofs.coq import CoqExportError, coq_ident, export_nodes, export_program, index_term, module_text
from attnsim.rasp import core as C
from attnsim.rasp import expr as E


def test_export_is_a_let_per_node_over_the_sizes() -> None:
    n = C.Size("n")
    src = C.imap(lambda p: p // n, C.indices)
    prog = C.aggregate(C.select(C.indices, src, "=="), C.tokens)
    out = export_program("p", prog, ("n",))
    assert out.text.startswith("Definition p (n : Z) : sop :=")
    assert "(IMap1 (fun x0 : Z => (Z.div x0 n)) n0)" in out.text
    assert "(Select n0 n1 CEq)" in out.text and "(Aggregate n2 n3)" in out.text
    assert "From Attnsim Require Import Semantics." in module_text([out])


def test_an_index_sop_read_as_a_value_is_wrapped() -> None:
    prog = C.apply("add", C.tokens, C.indices)
    assert "(Map2 PAdd n0 (OfIdx n1))" in export_program("p", prog).text


def test_a_shared_node_is_printed_once() -> None:
    x = C.apply("relu", C.tokens)
    text = export_program("p", C.apply("mul", x, x)).text
    assert text.count("PRelu") == 1


def test_a_label_cannot_close_its_comment() -> None:
    """Node labels are printed in comments: a label holding `*)` would end the comment and inject Coq
    text into the exported term; it is printed harmless."""
    x = C.apply("relu", C.tokens).named("relu *) n0. Notation n1 := Tokens. Definition t := (* ")
    text = export_program("p", x).text
    body = text.split(":=", 1)[1]
    assert "*) n0" not in body and body.count("(*") == body.count("*)") == 2  # one per node
    assert "(Map1 PRelu n0)" in text


def test_the_export_does_not_depend_on_what_the_process_built_before() -> None:
    """An unlabelled node's comment is its kind, not its generated label (which counts every node the
    process built): the text, a Coq cache key, is the same after other programs were built."""

    def program() -> C.SOp:
        return C.aggregate(C.select(C.indices, C.indices, "=="), C.apply("relu", C.tokens))

    first = export_program("p", program()).text
    for _ in range(3):
        C.apply("neg", C.apply("relu", C.tokens))
    assert export_program("p", program()).text == first
    assert "(* Select *)" in first and "(* Map *)" in first


def test_export_nodes_is_one_definition_per_node_named_by_its_label() -> None:
    """The same terms as the let form, each node a definition over the sizes read by name; a labelled
    node is named after its label (a clash gets its index), the others by their index, the root the
    program's name."""
    n = C.Size("n")
    x = C.apply("relu", C.tokens).named("act.x")
    y = C.apply("neg", x).named("act_x")  # the same identifier once '.' is '_'
    prog = C.aggregate(C.select(C.indices, C.imap(lambda p: p // n, C.indices), "=="), C.apply("mul", x, y))
    text = export_nodes("p", prog, ("n",)).text
    assert "Definition p_act_x (n : Z) : sop :=\n  (Map1 PRelu (p_tokens n))." in text
    assert "Definition p_act_x_5 (n : Z) : sop :=\n  (Map1 PNeg (p_act_x n))." in text
    assert "Definition p_n2 (n : Z) : sel :=\n  (Select (p_indices n) (p_n1 n) CEq)." in text
    assert text.count("PRelu") == 1 and text.count("Definition ") == 8
    assert text.rstrip().endswith("Definition p (n : Z) : sop :=\n  (Aggregate (p_n2 n) (p_n6 n)).")


def test_refusals_name_the_problem() -> None:
    with pytest.raises(CoqExportError, match="unbound sizes n"):
        src = C.imap(lambda p: p // C.Size("n"), C.indices)
        export_program("p", C.aggregate(C.select(C.indices, src, "=="), C.tokens))
    with pytest.raises(CoqExportError, match="value SOp where"):
        export_program("p", C.aggregate(C.select(C.indices, C.imap(lambda v: v + 1, C.tokens), "=="), C.tokens))
    with pytest.raises(CoqExportError, match="elu1"):
        export_program("p", C.apply("elu1", C.tokens))
    with pytest.raises(CoqExportError, match="SelectorWidth"):
        export_program("p", C.apply("identity", C.selector_width(C.select(C.indices, C.indices, "=="))))
    with pytest.raises(CoqExportError, match="not usable as a Coq identifier"):
        coq_ident("fun")


def test_a_selector_comparing_values_is_a_vselect_of_both_read_as_values() -> None:
    """A value on either side makes a VSelect (an index side read through OfIdx); two index SOps a Select."""
    allowed = C.apply("relu", C.tokens)
    text = export_program("p", C.aggregate(C.select(allowed, C.full(1), "=="), C.tokens)).text
    assert "(VSelect n1 (OfIdx n2) CEq)" in text
    assert "(Select n0 n0 CLt)" in export_program("p", C.aggregate(C.select(C.indices, C.indices, "<"), C.tokens)).text


def test_sqrt_and_the_gelu_forms_are_primitives_of_the_semantics() -> None:
    text = export_program("p", C.apply("gelu_tanh", C.apply("gelu", C.apply("sqrt", C.tokens)))).text
    assert "(Map1 PSqrt n0)" in text and "(Map1 PGelu n1)" in text and "(Map1 PGeluTanh n2)" in text


@given(st.integers(-50, 50), st.integers(1, 9))
def test_index_terms_mirror_python_operators(a: int, d: int) -> None:
    x = E.Var("x")
    e = E.if_((x // d).eq(a) & (x % d < 3), E.emax(x, 1), -x)
    t = index_term(e)
    assert t.startswith("(iif (iand (ieq (Z.div x") and "Z.modulo x" in t and "Z.max x" in t
