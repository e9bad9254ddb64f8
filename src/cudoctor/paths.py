"""Path helpers shared by the facts and the checks."""

from __future__ import annotations

import os


def is_under(path: str, directory: str) -> bool:
    """Whether `path` lies inside `directory` (component-wise: /site-packages2 is not under
    /site-packages). Both are normalised, neither is resolved."""
    if not directory:
        return False
    d = os.path.normpath(directory)
    p = os.path.normpath(path)
    return p == d or p.startswith(d.rstrip(os.sep) + os.sep)
