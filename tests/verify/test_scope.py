"""All-sizes obligations: proved only when the program equals its independent spec for every size.

Backs ``transpose/all-sizes/lemma`` (Lemma (transpose)) and ``matmul/all-sizes/lemma``
(Lemma (matmul)): for every size, output (h, i, j) is A[h, j, i], resp. Sum_l A[h, i, l] B[h, l, j];
and the scope tables of `attnsim verify`.
"""

from __future__ import annotations

import pytest

from attnsim.proofs.obligation import Result
from attnsim.proofs.registry import by_id
from attnsim.verify.runner import run_inline
from attnsim.verify.scope import scope_by_result, scope_summary


@pytest.mark.parametrize(
    "oid",
    [
        "transpose/all-sizes/lemma",
        "matmul/all-sizes/lemma",
        "softmax/all-sizes/lemma",
        "softmax/all-sizes/stable",
        "softmax-masked/all-sizes/lemma",
        "softmax-masked/all-sizes/stable",
        "relu/all-sizes/lemma",
        "maxmin/all-sizes/lemma",
        "faddeev-steps/all-sizes/trace",
        "faddeev-steps/all-sizes/iteration",
    ],
)
def test_registered_all_sizes_proved(oid: str) -> None:
    """Every registered all-sizes obligation is program == spec, proven (Lemmas transpose, matmul, 3, ...)."""
    r = run_inline(by_id(oid), 30)
    assert r.status == "proved", r.detail
    assert "program == spec" in r.detail and "rasp/z3-parametric/decode-position" in r.detail


def test_scope_summary() -> None:
    def res(cid: str, method: str, status: str, bound: int | None = None, tag: str = "x") -> Result:
        return Result(f"{cid}/{method}/{tag}", cid, "ref", method, bound, status, 0.1, "")

    rows = {
        name: (scope, why)
        for name, scope, why in scope_summary(
            [
                res("a", "all-sizes", "proved"),
                res("a", "numeric", "passed"),
                res("b", "z3-bounded", "proved", 8),
                res("b", "sympy", "proved", tag="n3"),
                res("c", "sympy", "proved", tag="cols3-rows2"),
                res("d", "numeric", "passed"),
                res("e", "all-sizes", "unknown"),
            ]
        )
    }
    assert rows["a"][0] == "all sizes"
    assert rows["b"][0] == "bounded (sizes <= 8)"
    assert rows["c"][0] == "bounded (sizes <= 3)"
    assert rows["d"][0] == "sampled"
    assert rows["e"][0] == "NOT VERIFIED"


def test_scope_by_result_needs_every_construction() -> None:
    """A paper result is 'all sizes' only when every construction backing it is."""

    def res(cid: str, ref: str, method: str, status: str) -> Result:
        return Result(f"{cid}/{method}/x", cid, ref, method, None, status, 0.1, "")

    rows = {
        ref: scope
        for ref, scope, _ in scope_by_result(
            [
                res("a", "Lemma 1", "all-sizes", "proved"),
                res("b", "Lemma 1", "numeric", "passed"),
                res("c", "Lemma 2", "all-sizes", "proved"),
                res("d", "Lemma 3", "all-sizes", "unknown"),
            ]
        )
    }
    assert rows == {"Lemma 1": "not all sizes", "Lemma 2": "all sizes", "Lemma 3": "NOT VERIFIED"}


def test_a_deep_all_sizes_obligation_not_run_is_named_with_how_to_run_it() -> None:
    """Theorem 6's whole-layer proof is deep: a default run's tables name it and say --deep."""
    from attnsim.proofs.obligation import Obligation, Outcome

    deep = Obligation("a/all-sizes/layer", "a", "Theorem 6", "all-sizes", lambda t: Outcome.good(), deep=True)
    rs = [Result("a/z3-parametric/x", "a", "Theorem 6", "z3-parametric", None, "proved", 0.1, "")]
    ((_, scope, why),) = scope_summary(rs, [deep])
    assert scope == "parts for all sizes" and why.endswith("a/all-sizes/layer (run --deep to check)"), why
    ((_, scope, why),) = scope_by_result(rs, [deep])
    assert scope == "not all sizes" and "not run: a/all-sizes/layer (run --deep to check)" in why, why
    ((_, scope, why),) = scope_summary(
        [*rs, Result("a/all-sizes/layer", "a", "Theorem 6", "all-sizes", None, "proved", 212.0, "")]
    )
    assert scope == "all sizes" and why == "a/all-sizes/layer (212.0 s)", why


def test_a_paper_result_is_not_evaluated_from_part_of_its_obligations() -> None:
    """A run of some of a result's obligations (--only) cannot give its scope: Proposition 1 backed by
    an all-sizes a and a bounded b is "not all sizes" in a full run, "not evaluated" when only a ran,
    and so is a construction that ran in part; a failure that ran still makes it NOT VERIFIED."""
    from attnsim.proofs.obligation import Obligation, Outcome
    from attnsim.verify.scope import NOT_EVALUATED

    def ob(oid: str, method: str, bound: int | None = None) -> Obligation:
        cid = oid.split("/", 1)[0]
        return Obligation(oid, cid, "Proposition 1", method, lambda t: Outcome.good(), bound=bound)

    def ran(o: Obligation, status: str = "proved") -> Result:
        return Result(o.id, o.construction, o.paper_ref, o.method, o.bound, status, 0.1, "")

    a, a2, b = (
        ob("a/all-sizes/layout", "all-sizes"),
        ob("a/z3-parametric/x", "z3-parametric"),
        ob("b/z3-bounded/x", "z3-bounded", 4),
    )
    full = [ran(a), ran(a2), ran(b)]
    assert scope_by_result(full)[0][1] == "not all sizes"
    ((ref, scope, why),) = scope_by_result([ran(a), ran(a2)], unrun=[b])
    assert (ref, scope) == ("Proposition 1", NOT_EVALUATED), why
    assert why.startswith("2 of the 3 obligations of the result ran (--only)"), why
    rows = {name: scope for name, scope, _ in scope_summary([ran(a)], unrun=[a2, b])}
    assert rows == {"a": NOT_EVALUATED}
    ((_, scope, why),) = scope_by_result([ran(a)], unrun=[a2])  # every obligation of the result's a ran but one
    assert scope == NOT_EVALUATED and "the construction" not in why, why
    ((_, scope, _),) = scope_by_result([ran(a, "failed")], unrun=[a2, b])
    assert scope == "NOT VERIFIED"


def test_kernel_label_says_fixed_size_for_a_construction_of_one_size() -> None:
    """The 3 x 3 determinant's kernel row quantifies over no size: "fixed size, kernel-checked", not
    "all sizes"; a kernel row over sizes is "all sizes, kernel-checked"; a variant's labels nothing."""
    from attnsim.proofs.obligation import KernelFacts

    def kern(cid: str, registered: bool, sizes: tuple[str, ...]) -> Result:
        facts = KernelFacts(("t",), (), registered, sizes)
        return Result(f"{cid}/kernel/T", cid, "ref", "kernel", None, "proved", 0.1, "", kernel=facts)

    inst = Result("det3/z3-instance/sum", "det3", "ref", "z3-instance", None, "proved", 0.1, "")
    rows = {n: s for n, s, _ in scope_summary([kern("det3", True, ()), inst, kern("t", True, ("rows",))])}
    assert rows == {"det3": "fixed size, kernel-checked", "t": "all sizes, kernel-checked"}
    ((_, scope, _),) = scope_summary([kern("det3", False, ()), inst])
    assert scope == "fixed instances"
