"""cudoctor: why GPU and BLAS work fails, and what fixes it.

`import cudoctor` imports no framework and nothing heavy; everything below loads on first use.

    report = cudoctor.check()                 # this machine, layer by layer
    diagnosis = cudoctor.explain(exc_or_log)  # root error and ranked causes
    cudoctor.preflight.matmul(a, b)           # raises PreflightError before an opaque library error
    cudoctor.preflight.labels(logits, target) # class labels checked before the loss
    with cudoctor.guard(): ...                # CUDA/BLAS exceptions get a diagnosis note (PEP 678)
    %load_ext cudoctor                        # the same for every notebook cell
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["PreflightError", "__version__", "check", "explain", "guard", "preflight"]

if TYPE_CHECKING:
    from cudoctor import preflight
    from cudoctor.api import check, explain
    from cudoctor.guarding import guard
    from cudoctor.preflight import PreflightError

_LAZY = {
    "check": ("cudoctor.api", "check"),
    "explain": ("cudoctor.api", "explain"),
    "guard": ("cudoctor.guarding", "guard"),
    "PreflightError": ("cudoctor.preflight", "PreflightError"),
    "preflight": ("cudoctor.preflight", None),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'cudoctor' has no attribute {name!r}")
    import importlib

    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext cudoctor`: explain CUDA / BLAS / shape / dtype / device errors in every cell."""
    from cudoctor.notebook import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from cudoctor.notebook import unload

    unload(ipython)
