"""IPython / Jupyter: `%load_ext cudoctor` explains GPU / BLAS / operand errors in every cell.

A custom exception handler adds the diagnosis note to the exception and shows the usual
traceback (which prints PEP 678 notes); other exceptions are shown exactly as before.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from cudoctor.guarding import diagnose_into


def _handler(
    shell: Any,
    etype: type[BaseException],
    value: BaseException,
    tb: TracebackType,
    tb_offset: int | None = None,
) -> Any:
    diagnose_into(value)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    return None


def load(ipython: Any) -> None:
    ipython.set_custom_exc((Exception,), _handler)


def unload(ipython: Any) -> None:
    ipython.set_custom_exc((), None)
