"""A torch package that lost its compiled core, built for real: a copy of the installed torch
(symlinks to its files) without torch/_C*.so, imported by a child Python. What that torch prints
is what explain reads; nothing here is typed by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cudoctor.explainer import rank
from tests.conftest import python_output
from tests.explainer.helpers import explain_text, top

SPEC = importlib.util.find_spec("torch")
pytestmark = pytest.mark.skipif(SPEC is None or SPEC.origin is None, reason="torch is not installed")


def torch_without_its_core(into: Path, keep_c_folder: bool) -> Path:
    """site-packages-like folder holding torch minus _C*.so (and minus the torch/_C stub folder
    unless `keep_c_folder`): what an interrupted upgrade or a half-removed wheel leaves."""
    assert SPEC is not None and SPEC.origin is not None
    real = Path(SPEC.origin).parent
    copy = into / "torch"
    copy.mkdir(parents=True)
    for entry in real.iterdir():
        lost = entry.name.startswith("_C.") or (entry.name == "_C" and not keep_c_folder)
        if not lost:
            (copy / entry.name).symlink_to(entry)
    return into


def import_output(site: Path, cwd: Path) -> str:
    status, out = python_output("import torch", {"PYTHONPATH": str(site)}, timeout=120, cwd=cwd)
    assert status != 0
    return out


def test_torch_without_c_extension_or_its_folder_reads_as_a_broken_install(tmp_path: Path) -> None:
    out = import_output(torch_without_its_core(tmp_path / "site", keep_c_folder=False), tmp_path)
    assert "ModuleNotFoundError: No module named 'torch._C'" in out
    exp = explain_text(out)
    assert exp.root is not None and exp.root.sig.id == "broken-install/torch-c-missing"
    assert top(exp)[:2] == ["broken-install", "env-path-misconfig"]


def test_torch_with_only_its_stub_folder_left_reads_the_same(tmp_path: Path) -> None:
    """torch >= 2 says 'Failed to load PyTorch C extensions' when the torch/_C folder is still there."""
    out = import_output(torch_without_its_core(tmp_path / "site", keep_c_folder=True), tmp_path)
    assert "Failed to load PyTorch C extensions" in out
    exp = explain_text(out)
    assert exp.root is not None and exp.root.sig.id == "broken-install/torch-c-missing"
    steps = rank.cause_json(exp.causes, 0)["fix"]
    assert any("cd /tmp" in s for s in steps) and any("--force-reinstall --no-deps torch" in s for s in steps)


def test_a_torch_that_imports_is_not_called_broken(tmp_path: Path) -> None:
    status, out = python_output("import torch; print(torch.__version__)", timeout=120, cwd=tmp_path)
    assert status == 0
    assert explain_text(out).root is None
