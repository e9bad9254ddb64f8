"""The frameworks cudoctor reads and their labels are written out once (model.FRAMEWORKS and
FRAMEWORK_LABEL): a copy elsewhere drifts when a framework is added."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "cudoctor"
LIST = re.compile(r'\(\s*"torch",\s*"tensorflow",\s*"jax",\s*"cupy"\s*\)')
LABELS = re.compile(
    r'"torch":\s*"PyTorch",\s*"tensorflow":\s*"TensorFlow"|"PyTorch":\s*"torch",\s*"TensorFlow"'
)


def test_the_framework_list_and_labels_live_in_model_only() -> None:
    holders = {
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if LIST.search(text := p.read_text(encoding="utf-8")) or LABELS.search(text)
    }
    assert holders == {"model.py"}
