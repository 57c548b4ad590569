"""A unit's findings carried to its next version when an edit only moved its code along its lines.

A character typed where the analysis keeps nothing but positions (a space between tokens, a letter in a
string or in a name the canonical form drops, `scores.device` -> `scores.dyevice` in a keyword the flow does
not read) leaves a class's canonical form the same in every field but the columns of the spans after it on
that line. Matching reads spans only to compare them (equality, order: `_span_key`, `Span.contains`, min and
max) and to copy them into findings; it never reads their numbers otherwise and never reads the source. So
when the new unit equals the old one field by field, each old span's ends map to the new span's ends, the
map keeps every line and is one-to-one and order-preserving on the points, the old unit's findings with
their spans mapped are exactly the findings of matching the new unit, and the unit is not matched again.
Any other difference (an op, a name, a value, a line) or a point the map does not cover: matched as before.

`Forward.applications` names each `if` around an inlined call by the `if`'s start byte, which any edit before
it moves (a letter typed in a comment above it). Matching reads those bytes only to compare them for equality
(`engine.applications`: which calls lie on one path), and no finding holds one, so they are mapped like span
ends: old byte to new byte, one-to-one and order-preserving, every other part of the application equal.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import fields, is_dataclass, replace

from adopter.dsl.types import Forward, Span

Point = tuple[int, int]
_NAMES: dict[type, tuple[str, ...]] = {}


class _Unmapped(Exception):
    """A span of a finding whose ends are not ends of a span of the unit (not carried)."""


class PointMap:
    """Old span ends to new ones, gathered while two units are compared."""

    def __init__(self) -> None:
        self.to_new: dict[Point, Point] = {}
        self._to_old: dict[Point, Point] = {}
        # The start bytes of the `if`s in `Forward.applications`' paths, old to new (the module docstring).
        self._bytes: dict[int, int] = {}
        self._bytes_old: dict[int, int] = {}
        # `_moved`'s results by the object mapped (held, so that its id is not reused): one unit's findings,
        # problems and rule answers share most of their parts (ops, spans, patterns), each mapped once.
        self.moved: dict[int, tuple[object, object]] = {}

    def add(self, old: Point, new: Point) -> bool:
        if old[0] != new[0]:
            return False  # a line moved: messages and line-based readings may differ, not carried
        got = self.to_new.get(old)
        if got is None:
            if self._to_old.setdefault(new, old) != old:
                return False  # two old points onto one new point
            self.to_new[old] = new
            return True
        return got == new

    def add_byte(self, old: int, new: int) -> bool:
        got = self._bytes.get(old)
        if got is None:
            if self._bytes_old.setdefault(new, old) != old:
                return False
            self._bytes[old] = new
            return True
        return got == new

    def monotone(self) -> bool:
        """Whether the map keeps the order of the points and of the bytes (then every comparison is kept)."""
        olds = sorted(self.to_new)
        news = [self.to_new[p] for p in olds]
        old_bytes = sorted(self._bytes)
        new_bytes = [self._bytes[b] for b in old_bytes]
        return all(a < b for a, b in itertools.pairwise(news)) and all(a < b for a, b in itertools.pairwise(new_bytes))

    def span(self, s: Span) -> Span:
        start = self.to_new.get((s.start_line, s.start_col))
        end = self.to_new.get((s.end_line, s.end_col))
        if start is None or end is None:
            raise _Unmapped
        if start == (s.start_line, s.start_col) and end == (s.end_line, s.end_col):
            return s
        return Span(start[0], start[1], end[0], end[1])


def moved_points(old: object, new: object) -> PointMap | None:
    """The map from `old`'s span ends to `new`'s when the two are equal in every field but spans (see the
    module docstring), else None."""
    points = PointMap()
    try:
        if not _alike(old, new) or not _same(old, new, points):
            return None
    except RecursionError:
        return None
    return points if points.monotone() else None


def carried(values: tuple[object, ...], points: PointMap) -> tuple[object, ...] | None:
    """`values` (a unit's findings or problems) with every span mapped, or None when a span's end is not in
    `points`."""
    try:
        return tuple(_moved(v, points) for v in values)
    except (_Unmapped, RecursionError):
        return None


_ATOM, _TUPLE, _SPAN, _FIELDS, _LIST, _DICT = range(6)
_KINDS: dict[type, int] = {str: _ATOM, int: _ATOM, float: _ATOM, bool: _ATOM, type(None): _ATOM, bytes: _ATOM,
                           tuple: _TUPLE, Span: _SPAN, list: _LIST, dict: _DICT}


_PLAIN = frozenset({str, int, float, bool, type(None), bytes})  # hold no span: compared by value at once


def _names(t: type) -> tuple[str, ...]:
    names = _NAMES.get(t)
    if names is None:
        names = tuple(f.name for f in fields(t)) if is_dataclass(t) else ()
        # The forward before `__init__`: an edit of a forward differs there, and the walk stops sooner.
        names = _NAMES[t] = tuple(sorted(names, key=lambda n: n != "forward"))
    return names


def _kind(t: type) -> int:
    kind = _KINDS.get(t)
    if kind is None:
        kind = _KINDS[t] = _FIELDS if _names(t) else _ATOM  # an enum, a set: compared by value
    return kind


def _same(a: object, b: object, points: PointMap) -> bool:
    t = type(a)
    if t is not type(b):
        return False
    kind = _KINDS.get(t)
    if kind is None:
        kind = _kind(t)
    if kind == _ATOM:
        return a is b or a == b  # a set holding spans that moved compares unequal: not carried
    if a is b and kind != _SPAN and kind != _FIELDS and kind != _TUPLE:
        return True
    if kind == _TUPLE:
        assert isinstance(a, tuple) and isinstance(b, tuple)
        return len(a) == len(b) and _pairs_same(zip(a, b), points)
    if kind == _SPAN:
        assert isinstance(a, Span) and isinstance(b, Span)
        return (points.add((a.start_line, a.start_col), (b.start_line, b.start_col))
                and points.add((a.end_line, a.end_col), (b.end_line, b.end_col)))
    if kind == _FIELDS:  # every field, those left out of `==` too (`Op.origin`, `Forward.calls`)
        if t is Forward:
            assert isinstance(a, Forward) and isinstance(b, Forward)
            return (_pairs_same(((getattr(a, n), getattr(b, n)) for n in _NAMES[t] if n != "applications"), points)
                    and _same_applications(a.applications, b.applications, points))
        return _pairs_same(((getattr(a, n), getattr(b, n)) for n in _NAMES[t]), points)
    if kind == _LIST:
        assert isinstance(a, list) and isinstance(b, list)
        return len(a) == len(b) and all(_same(x, y, points) for x, y in zip(a, b))
    assert isinstance(a, dict) and isinstance(b, dict)
    return list(a) == list(b) and all(_same(a[k], b[k], points) for k in a)


def _same_applications(a: tuple[tuple[tuple[str, ...], tuple[str, ...], Span, tuple[tuple[int, int], ...]], ...],
                       b: tuple[tuple[tuple[str, ...], tuple[str, ...], Span, tuple[tuple[int, int], ...]], ...],
                       points: PointMap) -> bool:
    """Two forwards' applications equal but for their spans and the start bytes of the `if`s on their paths,
    which go into `points`."""
    if len(a) != len(b):
        return False
    for (via, outs, span, path), (via2, outs2, span2, path2) in zip(a, b):
        if via != via2 or outs != outs2 or len(path) != len(path2) or not _same(span, span2, points):
            return False
        for (at, alternative), (at2, alternative2) in zip(path, path2):
            if alternative != alternative2 or not points.add_byte(at, at2):
                return False
    return True


def _pairs_same(pairs: Iterable[tuple[object, object]], points: PointMap) -> bool:
    """`_same` of each pair, the plain values (which hold no span) compared at once."""
    for x, y in pairs:
        if type(x) in _PLAIN:
            if type(y) is not type(x) or x != y:
                return False
        elif not _same(x, y, points):
            return False
    return True


def _alike(a: object, b: object) -> bool:
    """False when `a` and `b` differ in more than spans, found quickly (`==` on the parts that are equal,
    whose compiled comparison is several times faster than `_same`'s walk): most edits of a class change its
    canonical form, and they should pay little for this check. True says nothing (`==` leaves some fields
    out, and a span that moved makes its whole part unequal): `_same` decides."""
    t = type(a)
    if t is not type(b):
        return False
    kind = _KINDS.get(t)
    if kind is None:
        kind = _kind(t)
    if kind == _ATOM:
        return a is b or a == b
    if kind == _SPAN or a == b:
        return True
    if kind == _TUPLE:
        assert isinstance(a, tuple) and isinstance(b, tuple)
        return len(a) == len(b) and all(_alike(x, y) for x, y in zip(a, b))
    if kind == _FIELDS:  # a forward's applications hold bytes that move (`_same_applications` decides)
        return all(_alike(getattr(a, n), getattr(b, n)) for n in _NAMES[t] if t is not Forward or n != "applications")
    return True


def _moved(x: object, points: PointMap) -> object:
    """`x` with every span mapped by `points` (`x` itself when no span in it moved); a part already mapped
    through `points` (shared by several findings, or by the `carried` calls of one unit) is not walked again:
    the result is a function of the part and `points` alone."""
    t = type(x)
    if t is Span:
        assert isinstance(x, Span)
        return points.span(x)
    if t in _PLAIN:
        return x
    memo = points.moved
    found = memo.get(id(x))
    if found is not None and found[0] is x:
        return found[1]
    out = _moved_parts(x, t, points)
    memo[id(x)] = (x, out)
    return out


def _moved_parts(x: object, t: type, points: PointMap) -> object:
    if t is tuple:
        assert isinstance(x, tuple)
        items = tuple(_moved(y, points) for y in x)
        return x if all(a is b for a, b in zip(items, x)) else items
    if t is list:
        assert isinstance(x, list)
        return [_moved(y, points) for y in x]
    if t is frozenset:
        assert isinstance(x, frozenset)
        return frozenset(_moved(y, points) for y in x)
    if t is dict:
        assert isinstance(x, dict)
        return {k: _moved(v, points) for k, v in x.items()}
    names = _names(t)
    if not names:
        return x
    changed = [(n, v) for n in names if (v := _moved(getattr(x, n), points)) is not getattr(x, n)]
    if not changed:
        return x
    return replace(x, **dict(changed))  # type: ignore[type-var]
