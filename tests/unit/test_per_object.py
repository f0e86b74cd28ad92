"""The per-object cache: one computation per live object, again after an edit, and no entry
outlives its object or answers for a new object at the same address."""

from __future__ import annotations

import gc

from graph.support.per_object import PerObject


class Thing:
    def __init__(self, text: str) -> None:
        self.text = text


def test_one_computation_per_object_and_fingerprint() -> None:
    cache: PerObject[str] = PerObject()
    calls: list[str] = []

    def compute(thing: Thing) -> str:
        calls.append(thing.text)
        return thing.text.upper()

    a, b = Thing("a"), Thing("a")
    assert cache.get(a, 1, compute) == "A" and cache.get(a, 1, compute) == "A"
    assert cache.get(b, 1, compute) == "A"  # an equal object is another object
    assert calls == ["a", "a"]
    a.text = "edited"
    assert cache.get(a, 2, compute) == "EDITED"  # the fingerprint changed: computed again


def test_no_entry_outlives_its_object_or_answers_for_another() -> None:
    cache: PerObject[str] = PerObject()
    things = [Thing(str(i)) for i in range(50)]
    for thing in things:
        cache.get(thing, 0, lambda t: t.text)
    assert len(cache) == 50
    del things, thing
    gc.collect()
    assert len(cache) == 0
    # an entry whose object is gone (as if its callback had not run yet) is a miss
    ghost = Thing("ghost")
    cache.get(ghost, 0, lambda t: t.text)
    key = id(ghost)
    entry = cache._entries[key]
    newcomer = Thing("new")
    cache._entries[id(newcomer)] = entry  # same slot, another object
    assert cache.get(newcomer, 0, lambda t: t.text) == "new"
