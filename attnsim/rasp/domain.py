"""Value domains of SOps, propagated from ``indices``, ``length`` and the tokens up to ``max_len``.

A domain is a finite sorted set of rationals (``points``), or, when that set would be too large
to enumerate, bounds and a common denominator (``lo``, ``hi``, ``den``), or unknown reals
(:data:`REAL`).  The compiler uses domains for three things: exact lookup tables (piecewise-linear
ReLU interpolants are exact at the points), the score margin of an equality selector (the
smallest non-zero distance between a key value and a query value) and the soft-attention bound.
A domain is always a *superset* of the values a run can produce (means of selected values
included), so margins computed from it are safe.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

CAP = 200_000  # largest set of points enumerated explicitly
MEANS_CAP = 20_000  # largest set of aggregate means enumerated explicitly (else bounds + denominator)


class DomainError(ValueError):
    """A domain is needed explicitly but is unknown or too large."""


@dataclass(frozen=True)
class Domain:
    """A superset of the values an SOp takes (explicit points, or bounds + denominator, or reals)."""

    points: tuple[Fraction, ...] | None = None
    lo: Fraction | None = None
    hi: Fraction | None = None
    den: int | None = None

    @staticmethod
    def of(values: Iterable[Fraction | int]) -> Domain:
        pts = tuple(sorted({Fraction(v) for v in values}))
        if not pts:
            return Domain((), None, None, 1)
        den = math.lcm(*(p.denominator for p in pts))
        return Domain(pts, pts[0], pts[-1], den)

    @property
    def finite(self) -> bool:
        return self.points is not None or (self.lo is not None and self.hi is not None and self.den is not None)

    @property
    def integral(self) -> bool:
        return self.den == 1

    def size(self) -> int | None:
        if self.points is not None:
            return len(self.points)
        if self.lo is None or self.hi is None or self.den is None:
            return None
        return int((self.hi - self.lo) * self.den) + 1

    def require_points(self, what: str) -> tuple[Fraction, ...]:
        """The explicit points, or a clear error naming ``what`` needed them."""
        if self.points is not None:
            return self.points
        if self.finite:
            raise DomainError(f"{what}: the value set has about {self.size()} points, too many to enumerate")
        raise DomainError(f"{what}: the values are reals with no finite domain")

    def integer_points(self, what: str) -> tuple[int, ...]:
        """The integer members (index functions are defined only there)."""
        if self.points is not None:
            return tuple(int(p) for p in self.points if p.denominator == 1)
        if self.lo is None or self.hi is None:
            raise DomainError(f"{what}: an index function reads values with no finite integer range")
        a, b = math.ceil(self.lo), math.floor(self.hi)
        if b - a + 1 > CAP:
            raise DomainError(f"{what}: integer range [{a}, {b}] is larger than {CAP}")
        return tuple(range(a, b + 1))

    def describe(self) -> str:
        if self.points is not None:
            if len(self.points) <= 6:
                return "{" + ", ".join(str(p) for p in self.points) + "}"
            return f"{len(self.points)} points in [{self.lo}, {self.hi}]"
        if self.finite:
            return f"rationals in [{self.lo}, {self.hi}] with denominator | {self.den}"
        if self.lo is not None and self.hi is not None:
            return f"reals in [{self.lo}, {self.hi}]"
        return "reals"


REAL = Domain()


@dataclass(frozen=True)
class Interval:
    """A bound given to ``compile(domains=...)`` for a real-valued SOp: its values lie in [lo, hi]
    (no finite set).  A value-scored head needs one for its score: under hard attention the
    compiled max is exact for every score in the interval."""

    lo: Fraction | int | float
    hi: Fraction | int | float

    def domain(self) -> Domain:
        lo, hi = Fraction(self.lo), Fraction(self.hi)
        if lo > hi:
            raise DomainError(f"Interval({self.lo}, {self.hi}): lo > hi")
        return Domain(None, lo, hi, None)


def integers(lo: int, hi: int) -> Domain:
    """{lo, ..., hi}."""
    return Domain.of(range(lo, hi + 1))


def means(values: Domain, n: int) -> Domain:
    """A superset of {0} and every mean of 1..n values from ``values`` (what an aggregate yields)."""
    if not values.finite:
        return Domain()
    if values.points is not None and len(values.points) <= 1:
        return Domain.of([Fraction(0), *values.points])
    assert values.lo is not None and values.hi is not None and values.den is not None
    lo, hi, den = min(values.lo, Fraction(0)), max(values.hi, Fraction(0)), values.den
    a, b = int(lo * den), int(hi * den)
    total = sum(m * (b - a) + 1 for m in range(1, n + 1))
    if total > MEANS_CAP:
        big_den = den * math.lcm(*range(1, n + 1))
        return Domain(None, lo, hi, big_den)
    pts = {Fraction(p, m * den) for m in range(1, n + 1) for p in range(m * a, m * b + 1)}
    return Domain.of(pts)


def product(domains: list[tuple[int, ...]]) -> int:
    """Number of points of a product of integer point sets."""
    return math.prod(len(d) for d in domains)


def min_gap(a: Domain, b: Domain) -> Fraction | None:
    """A positive lower bound on |x - y| over x in a, y in b, x != y (None: no such bound)."""
    if not (a.finite and b.finite):
        return None
    if a.points is not None and b.points is not None:
        union = sorted(set(a.points) | set(b.points))
        if len(union) < 2:
            return Fraction(1)
        return min(y - x for x, y in itertools.pairwise(union))
    assert a.den is not None and b.den is not None
    return Fraction(1, math.lcm(a.den, b.den))
