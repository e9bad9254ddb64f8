#!/usr/bin/env python3
"""Retrain the learned model of `cudoctor explain` from the shipped corpus and the signatures.

    python tools/train_explain_model.py          # writes src/cudoctor/knowledge/explain_model.json.gz

Run it after adding reports to src/cudoctor/knowledge/corpus/ or signatures (a test fails while the
model's stamp and its training data disagree). Pure Python, a second or two.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))

from cudoctor.explainer import learned, training


def main() -> int:
    model = training.train_shipped()
    learned.save(model)
    size = os.path.getsize(learned.PATH)
    print(
        f"trained on {model.n} documents, {len(model.classes)} causes, {len(model.df)} tokens; "
        f"stamp {model.stamp}; {learned.PATH} ({size // 1024} KiB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
