"""JAX's GPU client settings (XLA_CLIENT_MEM_FRACTION and the XLA_PYTHON_CLIENT_* variables), read
as the installed jaxlib reads them: every combination the check calls an error is one the real
jaxlib.xla_client refuses, and the others it takes. Older releases (0.4.30 to 0.9.0, read from
their wheels) differ in which variables they know; the rows say from which release."""

from __future__ import annotations

import importlib.metadata

import pytest

from cudoctor.model import Severity
from tests.conftest import run_check, stated
from tests.explainer.helpers import rooted


def jaxlib_backend_error(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str | None:
    """What jax reports when the installed jaxlib refuses `env` at CUDA backend start (its own
    ValueError inside xla_bridge's "Unable to initialize backend" line); None when it takes it."""
    xla_client = pytest.importorskip("jaxlib.xla_client")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        xla_client.generate_pjrt_gpu_plugin_options()
    except ValueError as refused:
        return (
            f"RuntimeError: Unable to initialize backend 'cuda': {refused} (you may need to uninstall "
            "the failing plugin package, or set JAX_PLATFORMS=cpu to skip this backend.)"
        )
    return None


def _errors(env: dict[str, str], version: str | None) -> list[str]:
    jax = {"version": version, "build": "cuda", "cuda": "12.8"}
    found = run_check("env-setting-misread", stated({}, env=env, framework__jax=jax)).findings
    return [f.title for f in found if f.severity is Severity.ERROR]


CASES = [
    {"XLA_CLIENT_MEM_FRACTION": ".6"},
    {"XLA_CLIENT_MEM_FRACTION": "60%"},
    {"XLA_CLIENT_MEM_FRACTION": ""},
    {"XLA_PYTHON_CLIENT_MEM_FRACTION": ""},
    {"XLA_CLIENT_MEM_FRACTION": ".6", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".9"},
    {"XLA_CLIENT_MEM_FRACTION": "", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".9"},
    {"XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB": "1024"},
    {"XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB": "1GB"},
    {"XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB": " 512 "},
    {"XLA_PYTHON_CLIENT_COLLECTIVE_MEM_SIZE_MB": ""},
    {"XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE": "1"},
    {"XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE": "true"},
    {"XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE": ""},
    {"XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT": "0"},
    {"XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT": "yes"},
    {"XLA_PYTHON_CLIENT_ALLOCATOR": "vmm"},
]


@pytest.mark.parametrize("env", CASES, ids=[",".join(f"{k}={v}" for k, v in c.items()) for c in CASES])
def test_the_check_refuses_exactly_what_the_installed_jaxlib_refuses(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = jaxlib_backend_error(env, monkeypatch)
    errors = _errors(env, importlib.metadata.version("jaxlib"))
    assert bool(errors) is (refused is not None), errors


def test_both_memory_fraction_names_say_which_to_drop() -> None:
    [title] = _errors({"XLA_CLIENT_MEM_FRACTION": ".6", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".9"}, "0.6.2")
    assert title.startswith(
        "XLA_PYTHON_CLIENT_MEM_FRACTION='.9' is set together with XLA_CLIENT_MEM_FRACTION:"
    )
    assert "Remove the latter one, it is deprecated" in title


@pytest.mark.parametrize(
    ("env", "version"),
    [
        ({"XLA_CLIENT_MEM_FRACTION": "60%"}, "0.4.30"),  # not read before 0.5
        ({"XLA_CLIENT_MEM_FRACTION": ".6", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".9"}, "0.4.30"),
        ({"XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT": "yes"}, "0.6.2"),  # not read before 0.7
        ({"XLA_PYTHON_CLIENT_ABORT_COLLECTIVES_ON_FAILURE": "true"}, None),  # release unknown
    ],
)
def test_releases_that_do_not_read_a_variable_are_not_judged(
    env: dict[str, str], version: str | None
) -> None:
    assert _errors(env, version) == []


def test_vmm_is_refused_by_releases_before_0_10_and_read_after() -> None:
    [title] = _errors({"XLA_PYTHON_CLIENT_ALLOCATOR": "vmm"}, "0.9.0")
    assert title.startswith(
        "XLA_PYTHON_CLIENT_ALLOCATOR='vmm' is not one of default, platform, bfc, cuda_async:"
    )
    assert _errors({"XLA_PYTHON_CLIENT_ALLOCATOR": "vmm"}, "0.10.2") == []
    assert _errors({"XLA_PYTHON_CLIENT_ALLOCATOR": "vmm"}, None) == []  # release unknown: every value is read


@pytest.mark.parametrize(
    "env",
    [
        {"XLA_PYTHON_CLIENT_USE_TFRT_GPU_CLIENT": "true"},
        {"XLA_CLIENT_MEM_FRACTION": ".6", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".9"},
    ],
)
def test_explain_reads_what_the_installed_jaxlib_raises(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The jaxlib's own error, wrapped the way jax's xla_bridge reports a backend that failed."""
    line = jaxlib_backend_error(env, monkeypatch)
    assert line is not None
    exp = rooted(line, "env-setting-invalid/jax-client-setting")
    assert exp.causes[0].id == "env-setting-invalid" and "set only one of the two" in exp.causes[0].fixes[0]
