"""`pytest --cudoctor`: a failing test whose exception or captured output holds a GPU, CUDA or BLAS
error gets a "cudoctor" section in its report (root error, causes, first fixes), and the summary
counts them. Registered through the pytest11 entry point; does nothing unless --cudoctor is given.
Explains with stated facts only (no live probing per test: a test run stays fast)."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

EXPLAINED = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cudoctor")
    group.addoption(
        "--cudoctor",
        action="store_true",
        default=False,
        help="explain failing tests whose error is a GPU, CUDA or BLAS one (cudoctor section in the report)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[EXPLAINED] = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if not item.config.getoption("cudoctor") or not report.failed or call.excinfo is None:
        return
    from cudoctor import api

    text = "\n".join(
        [api.exception_text(call.excinfo.value)] + [content for _, content in report.sections if content]
    )
    diagnosis = api.explain(text, live=False)  # a fast note per failing test
    if not diagnosis.matched or not diagnosis.causes:
        return
    report.sections.append(("cudoctor", diagnosis.summary(max_causes=3)))
    item.config.stash[EXPLAINED] += 1


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if config.getoption("cudoctor") and config.stash.get(EXPLAINED, 0):
        n = config.stash[EXPLAINED]
        terminalreporter.write_line(
            f"cudoctor: {n} failing test{'s' if n != 1 else ''} with a GPU/CUDA/BLAS error explained "
            "(see the 'cudoctor' section of each)"
        )
