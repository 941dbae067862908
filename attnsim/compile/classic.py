"""Classic RASP programs (Weiss et al. 2021; Tracr's library), written in our language.

Used for the exhaustive equivalence checks of the compiler and the size comparison with Tracr.
Each factory returns a fresh program (an SOp).
"""

from __future__ import annotations

from collections.abc import Callable

from attnsim.rasp import core as C


def length() -> C.SOp:
    """The sequence length, as RASP computes it: selector_width(select(tokens, tokens, TRUE))."""
    return C.selector_width(C.select(C.tokens, C.tokens, "TRUE").named("all")).named("length")


def reverse() -> C.SOp:
    """tokens reversed: position i reads position length - i - 1."""
    n = length()
    opp = C.imap(lambda n_, i: n_ - i - 1, n, C.indices).named("opp_index")
    flip = C.select(C.indices, opp, "==").named("flip")
    return C.aggregate(flip, C.tokens).named("reverse")


def histogram() -> C.SOp:
    """How many tokens equal this one."""
    same = C.select(C.tokens, C.tokens, "==").named("same_tok")
    return C.selector_width(same).named("histogram")


def sort_unique() -> C.SOp:
    """Tokens sorted ascending (exact when they are distinct; duplicates average, as AHAT does)."""
    smaller = C.selector_width(C.select(C.tokens, C.tokens, "<").named("smaller_sel")).named("smaller")
    target = C.select(smaller, C.indices, "==").named("target")
    return C.aggregate(target, C.tokens).named("sort")


def fraction_previous_zeros() -> C.SOp:
    """The fraction of tokens so far (up to this position) that are 0."""
    prevs = C.select(C.indices, C.indices, "<=").named("prevs")
    is_zero = C.imap(lambda t: t.eq(0), C.tokens).named("is_zero")
    return C.aggregate(prevs, is_zero).named("frac_zeros")


LIMITS: dict[str, str] = {
    "sort_unique": "sorts distinct tokens only: with a repeated token, average hard attention averages the "
    "duplicates' targets, so the output is not a sort (Tracr's sort_unique is not one there either)",
}

PROGRAMS: dict[str, Callable[[], C.SOp]] = {
    "length": length,
    "reverse": reverse,
    "histogram": histogram,
    "sort_unique": sort_unique,
    "frac_prevs": fraction_previous_zeros,
}
