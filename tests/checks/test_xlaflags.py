"""xla-flags-unknown: XLA_FLAGS read against the flags the installed jaxlib and TensorFlow register,
taken from their libraries without importing them, and checked against what the real jaxlib and
tensorflow-cpu do with the same XLA_FLAGS (abort or run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudoctor.facts import xlaflags
from cudoctor.facts.packages import find_package_dir
from cudoctor.model import Severity, absent
from tests.conftest import run_check, stated
from tests.explainer.helpers import explain_text, top


def _library(framework: str) -> str:
    package, files = xlaflags.LIBRARIES[framework]
    pytest.importorskip(package)
    root = find_package_dir(sys.path, package) or ""
    path = next((os.path.join(root, f) for f in files if os.path.isfile(os.path.join(root, f))), None)
    if path is None:
        pytest.skip(f"no {package} XLA library in a known place")
    return path


def test_flag_names_are_read_as_xla_reads_xla_flags() -> None:
    value = "--xla_gpu_graph_level=0  -xla_dump_to='/tmp/a b' --xla_gpu_enable_command_buffer= --tf_xla_auto_jit=2"
    assert xlaflags.flag_names(value) == [
        "xla_gpu_graph_level",
        "xla_dump_to",
        "xla_gpu_enable_command_buffer",
    ]
    assert xlaflags.flag_names("--xla_a=1 --xla_a=2 'unclosed") == ["xla_a"]


def test_registered_flags_are_whole_strings_not_descriptor_names() -> None:
    flags = xlaflags.registered_flags(_library("jax"))
    assert {"xla_force_host_platform_device_count", "xla_gpu_enable_command_buffer"} <= flags
    assert (
        "xla_gpu_graph_level" not in flags
    )  # removed (openxla/xla#30187); only a reserved proto name remains


def _run_jax(flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import jax.numpy as jnp; print(float(jnp.ones(2).sum()))"],
        env={**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "flag",
    [
        "xla_gpu_graph_level=0",
        "xla_force_host_platform_device_count=2",
        "xla_gpu_enable_command_buffer=",
        "xla_gpu_no_such_flag_at_all=true",
    ],
)
def test_the_flags_read_agree_with_the_installed_jaxlib(flag: str) -> None:
    """jaxlib aborts exactly on the flags the library reading calls unknown, and explain reads
    the line it prints."""
    known = flag.split("=", 1)[0] in xlaflags.registered_flags(_library("jax"))
    done = _run_jax(f"--{flag}")
    assert (done.returncode == 0) is known, done.stderr[-1500:]
    if not known:
        exp = explain_text(done.stderr)
        assert exp.root is not None and exp.root.sig.id == "env-setting-invalid/xla-flags-unknown"
        assert top(exp)[0] == "env-setting-invalid" and f"--{flag}" in exp.causes[0].fixes[0]


def test_tensorflow_aborts_at_its_first_xla_compile_on_a_flag_it_lacks() -> None:
    _library("tensorflow")
    assert "xla_gpu_graph_level" not in xlaflags.registered_flags(_library("tensorflow"))
    code = "import tensorflow as tf\nf = tf.function(lambda x: x * 2, jit_compile=True)\nprint(float(f(tf.ones([]))))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "XLA_FLAGS": "--xla_gpu_graph_level=0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "Unknown flag in XLA_FLAGS: --xla_gpu_graph_level=0" in done.stderr


def test_the_fact_names_unknown_flags_per_framework_from_a_laid_out_site(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "jaxlib").mkdir(parents=True)
    (site / "jaxlib" / "libjax_common.so").symlink_to(_library("jax"))
    (site / "jaxlib" / "__init__.py").write_text("")
    fact = xlaflags.collect({"XLA_FLAGS": "--xla_gpu_graph_level=0 --xla_dump_to=/tmp/x"}, [str(site)])
    assert fact.status == "known"
    assert fact.value["readers"]["jax"]["unknown"] == ["xla_gpu_graph_level"]
    assert "tensorflow" not in fact.value["readers"]


def test_the_fact_is_absent_without_xla_flags_and_unknown_without_a_readable_library(tmp_path: Path) -> None:
    assert xlaflags.collect({}, [str(tmp_path)]).status == "absent"
    (tmp_path / "jaxlib").mkdir()
    (tmp_path / "jaxlib" / "__init__.py").write_text("")
    (tmp_path / "jaxlib" / "libjax_common.so").write_bytes(b"not an ELF file")
    assert xlaflags.collect({"XLA_FLAGS": "--xla_dump_to=/tmp/x"}, [str(tmp_path)]).status == "unknown"


JAX = {"version": "0.4.30", "jaxlib": "0.4.30", "build": "cuda", "cuda": "12.3"}


def _fact(unknown: list[str]) -> dict[str, object]:
    return {
        "flags": ["xla_dump_to", *unknown],
        "readers": {"jax": {"libraries": [], "flags_known": 300, "unknown": unknown}},
    }


def test_the_check_names_the_flag_and_its_replacement() -> None:
    snap = stated(
        {},
        env={"XLA_FLAGS": "--xla_gpu_graph_level=0"},
        framework__jax=JAX,
        xla__flags=_fact(["xla_gpu_graph_level"]),
    )
    [f] = run_check("xla-flags-unknown", snap).findings
    assert f.severity is Severity.ERROR and f.cause == "env-setting-invalid"
    assert f.title.startswith("XLA_FLAGS sets --xla_gpu_graph_level, which jaxlib 0.4.30 does not have")
    assert f.fix[0].startswith("--xla_gpu_graph_level was replaced by --xla_gpu_enable_command_buffer")


def test_known_flags_stay_silent_and_no_xla_flags_skips() -> None:
    assert run_check("xla-flags-unknown", stated({}, xla__flags=_fact([]))).findings == ()
    unset = stated({})
    unset.add(absent("xla.flags", "environment", "XLA_FLAGS is not set"))
    assert run_check("xla-flags-unknown", unset).outcome == "skipped"
