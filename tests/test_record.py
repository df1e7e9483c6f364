"""`shape_lint.record.Record`: what the CLI's value classes used of `dataclasses`."""

from __future__ import annotations

import pytest

from shape_lint.record import Record, factory


class Point(Record):
    _hidden = frozenset({"note"})

    x: int
    y: int = 0
    tags: list[str] = factory(list)
    note: str | None = None


class Frozen(Record):
    _frozen = True

    a: int = 1
    b: tuple[int, ...] = ()


def test_construction_defaults_and_factories():
    p = Point(1, y=2)
    assert (p.x, p.y, p.tags, p.note) == (1, 2, [], None)
    q = Point(x=1)
    q.tags.append("t")
    assert Point(x=1).tags == [], "a factory default is made afresh for each instance"
    with pytest.raises(TypeError, match="missing argument 'x'"):
        Point()
    with pytest.raises(TypeError, match="unexpected"):
        Point(1, z=3)
    with pytest.raises(TypeError, match="multiple values"):
        Point(1, x=2)
    with pytest.raises(TypeError, match="positional"):
        Point(1, 2, [], None, 5)


def test_equality_repr_and_hidden_fields():
    assert Point(1, note="a") == Point(1, note="b"), "a hidden field is not compared"
    assert Point(1) != Point(2)
    assert Point(1) != Frozen(1)
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags=[])"
    with pytest.raises(TypeError, match="unhashable"):
        hash(Point(1))


def test_frozen_records_hash_and_replace():
    f = Frozen(b=(1,))
    assert hash(f) == hash(Frozen(1, (1,))) and {f: 1}[Frozen(1, (1,))] == 1
    with pytest.raises(AttributeError, match="frozen"):
        f.a = 2
    g = f.replace(a=5)
    assert (g.a, g.b, f.a) == (5, (1,), 1) and type(g) is Frozen
    with pytest.raises(TypeError, match="no fields"):
        f.replace(c=1)
    p = Point(1)
    p.y = 7  # a record that is not frozen is mutable
    assert p.y == 7
    with pytest.raises(AttributeError):
        p.other = 1  # no field made by a typo
