"""The benchmark registry: every module listed declares its benchmark, names are unique,
and a module that forgets a declaration is named before anything runs."""

from __future__ import annotations

import pytest

from bench import registry


def test_every_listed_module_declares_a_benchmark_under_a_unique_name() -> None:
    found = registry.load()
    assert len(found) == len(registry.MODULES)
    assert list(found)[:3] == ["locomo", "crossval", "latency"]  # the order make bench prints
    assert all(b.description and callable(b.run) for b in found.values())


def test_a_module_without_its_declarations_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "MODULES", ("indexing", "report"))
    with pytest.raises(TypeError, match=r"bench/report.py must declare NAME, DESCRIPTION, run"):
        registry.load()


def test_a_name_taken_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "MODULES", ("indexing", "indexing"))
    with pytest.raises(ValueError, match="two benchmarks are named 'indexing'"):
        registry.load()
