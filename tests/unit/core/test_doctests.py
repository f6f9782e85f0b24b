"""Every module's doctests run: the examples in the docstrings (an algorithm's worked cases, a rule's
rewrites) are part of the suite, so a docstring that no longer tells the truth fails it."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("risingspark", "frontend", "meta", "compute", "compactor")


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        names += [m.name for m in pkgutil.walk_packages(root.__path__, f"{package}.")]
    return sorted(names)


@pytest.mark.parametrize("name", [m for m in _modules() if not m.endswith("__main__")])
def test_module_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests of {name} failed"
