"""CuPy packages installed over each other (the check on installed packages, CuPy's own warning, a module
left incomplete) and CuPy's memory pool running out. Lines are from the threads each signature's source names."""

from __future__ import annotations

from tests.conftest import explained, ids, run_check, stated

WARNING = """/usr/local/lib/python3.12/dist-packages/cupy/_environment.py:670: UserWarning:
--------------------------------------------------------------------------------

  CuPy may not function correctly because multiple CuPy packages are installed
  in your environment:

    cupy-cuda12x, cupy-cuda13x
"""  # gpustack/gpustack#5459


def test_two_cupy_wheels_are_reported_with_every_package_to_remove() -> None:
    snap = stated({}, python__packages={"cupy-cuda12x": "13.6.0", "cupy-cuda13x": "14.0.0", "numpy": "2.3.0"})
    result = run_check("multiple-cupy-packages", snap)
    assert [f.id for f in result.findings] == ["multiple-cupy-packages"]
    assert "cupy-cuda12x 13.6.0, cupy-cuda13x 14.0.0" in result.findings[0].title
    assert "pip uninstall -y cupy-cuda12x cupy-cuda13x" in result.findings[0].fix[0]


def test_a_source_build_beside_a_wheel_counts_and_lookalike_names_do_not() -> None:
    both = stated({}, python__packages={"cupy": "13.0.0", "cupy-cuda11x": "13.0.0"})
    assert [f.id for f in run_check("multiple-cupy-packages", both).findings] == ["multiple-cupy-packages"]
    one = stated({}, python__packages={"cupy-cuda12x": "13.6.0", "cupy-xarray": "0.1.4"})
    assert run_check("multiple-cupy-packages", one).outcome == "ok"
    assert run_check("multiple-cupy-packages", stated({})).outcome == "unknown"


def test_cupys_own_warning_is_read_and_the_installed_pair_confirms_it() -> None:
    exp = explained(WARNING)
    assert exp.root is not None and exp.root.sig.id == "multiple-toolkits/cupy-multiple-packages"
    assert ids(exp)[0] == "multiple-toolkits"
    snap = stated({}, python__packages={"cupy-cuda12x": "13.6.0", "cupy-cuda13x": "14.0.0"})
    confirmed = explained(WARNING, snap)
    assert [f.id for f in confirmed.causes[0].findings] == ["multiple-cupy-packages"]


def test_a_core_submodule_missing_from_cupy_is_an_install_over_another() -> None:
    exp = explained("AttributeError: module 'cupy' has no attribute 'random'\n")  # cupy/cupy#3541
    assert exp.root is not None and exp.root.sig.id == "multiple-toolkits/cupy-module-incomplete"
    assert ids(exp)[:2] == ["multiple-toolkits", "broken-install"]
    # a NumPy name CuPy never had is the caller's, not a broken install
    assert explained("AttributeError: module 'cupy' has no attribute 'float'\n").root is None


def test_cupys_memory_pool_running_out_is_gpu_memory_in_both_wordings() -> None:
    for line in (
        "Exception in main training loop: Out of memory allocating 25,600,000 bytes (allocated so far: 3,635,267,072 bytes).",
        "Exception in main training loop: out of memory to allocate 163840000 bytes (total 1673061376 bytes)",
    ):
        exp = explained(line + "\n")
        assert exp.root is not None and exp.root.sig.id == "gpu-oom/cupy-pool-out-of-memory"
        assert ids(exp)[0] == "gpu-oom"
        assert any("free_all_blocks" in f for f in exp.causes[0].fixes)


def test_a_cupy_wheel_of_another_cuda_than_the_toolkit_is_reported_and_planned_with_real_package_names() -> (
    None
):
    """colabtools#409: Colab moved to CUDA 10.0 with cupy-cuda92 preinstalled; the fix was cupy-cuda100 (there is
    no cupy-cuda10x: before CUDA 11.2 CuPy made one wheel per CUDA minor)."""
    from cudoctor import api

    facts = {"framework_version": "cupy-cuda92", "system_cuda": "CUDA 10.0 (container default)"}
    result = run_check("cupy-cuda-mismatch", stated(facts))
    assert [f.cause for f in result.findings] == ["cuda-libs-missing"]
    report = api.check(facts, live=False)
    (finding,) = [f for f in report.findings if f.id == "cupy-cuda-mismatch"]
    assert finding.fix[0].startswith("pip uninstall -y cupy-cuda92 && pip install cupy-cuda100")
    assert not any("cuda10x" in s or "cuda9x" in s for s in finding.fix)


def test_a_cupy_wheel_the_toolkit_can_serve_or_that_brings_its_own_libraries_is_silent() -> None:
    # cupy/cupy#4043: cupy-cuda110 runs on a CUDA 11.1 toolkit (from CUDA 11 the sonames carry the major only)
    same_major = {"framework_version": "cupy-cuda110", "system_cuda": "11.1"}
    assert run_check("cupy-cuda-mismatch", stated(same_major)).outcome == "ok"
    ctk = {"framework_version": "cupy-cuda12x[ctk] 14.0.0", "system_cuda": "11.8"}
    assert run_check("cupy-cuda-mismatch", stated(ctk)).outcome == "ok"
    assert run_check("cupy-cuda-mismatch", stated({"framework_version": "cupy-cuda12x"})).outcome == "unknown"


def test_cupy_packages_are_named_per_cuda_release_as_pypi_has_them() -> None:
    from cudoctor import knowledge

    assert [
        knowledge.cupy_package(c)
        for c in ("9.2", "10.0", "10.2", "11.0", "11.1", "11.2", "11.8", "12.4", "13.0")
    ] == [
        "cupy-cuda92",
        "cupy-cuda100",
        "cupy-cuda102",
        "cupy-cuda110",
        "cupy-cuda111",
        "cupy-cuda11x",
        "cupy-cuda11x",
        "cupy-cuda12x",
        "cupy-cuda13x",
    ]
    assert knowledge.cupy_package("7.5") is None and knowledge.cupy_package(None) is None
