"""Each entry module imports first in a fresh interpreter: an import cycle (the binder and the batch
query's catalog rewrites import each other's helpers) fails only when the cycle is entered at one
particular module, which a test process that imported others before never sees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# services' entry points, and the modules tools and tests import on their own
FIRST = ["risingspark.cli", "frontend.main", "frontend.session", "frontend.binder", "frontend.binder.function",
         "frontend.binder.strings", "frontend.catalog.rewrite", "frontend.catalog.strict_functions",
         "frontend.batch_errors", "compute.server", "meta.main", "compactor.main"]


@pytest.mark.parametrize("module", FIRST)
def test_a_module_imports_first(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
