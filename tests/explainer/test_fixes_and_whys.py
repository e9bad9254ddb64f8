"""How explain puts causes, whys and fixes together: steps per cause and per framework, contracts
that confirm both sides, a signature's own why, placeholders, and the validation of signature fields."""

from __future__ import annotations

import dataclasses

import pytest

from cudoctor import knowledge
from cudoctor.explainer import rank, signatures
from tests.explainer.helpers import explain_text, rooted, top


def test_a_signature_step_for_one_cause_goes_under_that_cause_only() -> None:
    exp = explain_text(
        "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR\n", {"gpu": "NVIDIA GeForce GTX 1080 Ti"}
    )
    fixes = {c.id: " ".join(c.fixes) for c in exp.causes}
    assert "Ada GPUs" in fixes["arch-unsupported"] and "Ada GPUs" not in fixes["gpu-oom"]
    assert "plan" in fixes["gpu-oom"] and "plan" not in fixes["arch-unsupported"]


def test_a_fix_naming_several_frameworks_is_kept_for_each() -> None:
    from cudoctor.explainer.rank import for_framework

    fixes = [
        "TensorFlow: export TF_FORCE_GPU_ALLOW_GROWTH=true; JAX: export XLA_PYTHON_CLIENT_PREALLOCATE=false",
        "PyTorch: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "Reduce the batch size",
    ]
    assert for_framework(fixes, "jax") == [fixes[0], fixes[2]]
    assert for_framework(fixes, "torch") == fixes[1:]
    assert for_framework(fixes, None) == fixes


PTX_222 = "ERROR: CUDA error: the provided PTX was compiled with an unsupported toolchain., line 148, file cuda_memtest.cu\n"
XLA_PTXAS = "The NVIDIA driver's CUDA version is 11.2 which is older than the ptxas CUDA version (11.3.109). Because the driver is older than the ptxas version, XLA is disabling parallel compilation\n"
OLD_DRIVER_NEW_TOOLKIT = {"driver": "460.80", "system_cuda": "11.3"}


def test_a_broken_contract_confirms_both_sides_and_the_log_picks_one() -> None:
    """Toolkit 11.3 vs driver 460 (CUDA 11.2): error 222 blames the driver, XLA's ptxas notice the ptxas."""
    exp = explain_text(PTX_222, OLD_DRIVER_NEW_TOOLKIT)
    assert top(exp)[:2] == ["driver-too-old", "toolchain-not-found"]
    assert any("newer than the CUDA 11.2" in r for r in exp.causes[0].reasons)
    assert top(explain_text(XLA_PTXAS, OLD_DRIVER_NEW_TOOLKIT))[0] == "toolchain-not-found"


def test_the_other_side_of_a_contract_needs_the_fact() -> None:
    """Without the driver fact, error 222 falls back to the signature's priors alone."""
    exp = explain_text(PTX_222, {"system_cuda": "11.3"})
    assert top(exp)[0] == "driver-too-old"
    assert not any(r.startswith("fact:") for c in exp.causes for r in c.reasons)


# numba's linker error, then the driver JIT's own log on the next line (uw-ipd/tmol#108).
NUMBA_PTX_62 = """numba.cuda.cudadrv.driver.LinkerError: [218] Call to cuLinkAddData results in UNKNOWN_CUDA_ERROR
ptxas application ptx input, line 9; fatal   : Unsupported .version 6.2; current version is '6.1'
ptxas fatal   : Ptx assembly aborted due to errors
"""
XLA_PTXAS_OLD = (
    "ptxas /tmp/tempfile-x.ptx, line 5; fatal   : Unsupported .version 7.8; current version is '7.4'\n"
)


def test_ptx_newer_than_the_drivers_jit_is_the_driver_not_a_ptxas_on_path() -> None:
    """The same ptxas words name the driver when the PTX was handed to the driver (in-memory 'ptx
    input', a cuLink call) and a standalone ptxas when it names a .ptx file it was given."""
    exp = rooted(NUMBA_PTX_62, "driver-too-old/driver-jit-older-than-ptx")
    assert top(exp)[0] == "driver-too-old"
    first = rank.cause_json(exp.causes, 0)
    assert "reads PTX 6.2" in first["fix"][0]
    assert "reads PTX ISA up to 6.1" in first["why"]  # this error's own why, not cudaErrorInsufficientDriver
    assert "cudaErrorInsufficientDriver" in knowledge.cause("driver-too-old")["why"]
    second = rank.cause_json(exp.causes, 1)  # the runner-up keeps its cause's general why
    assert second["id"] == "toolchain-not-found"
    assert second["why"] == knowledge.cause("toolchain-not-found")["why"]
    assert top(rooted(XLA_PTXAS_OLD, "toolchain-not-found/ptxas-too-old"))[0] == "toolchain-not-found"


def test_a_root_error_without_its_own_why_keeps_the_causes_general_one() -> None:
    exp = rooted(
        "RuntimeError: CUDA driver version is insufficient for CUDA runtime version",
        "driver-too-old/insufficient-driver",
    )
    assert rank.cause_json(exp.causes, 0)["why"] == knowledge.cause("driver-too-old")["why"]


def test_a_signature_fix_names_what_the_log_captured() -> None:
    log = (
        "ImportError: /usr/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
    )
    exp = explain_text(log)
    assert (
        top(exp)[0] == "binary-incompatible"
    )  # built against another torch: the taxonomy's binary-incompatible
    assert exp.causes[0].fixes[0].startswith("flash_attn_2_cuda was compiled against another torch")
    # A plain C extension's missing symbol is not a torch ABI problem.
    assert not explain_text(
        "ImportError: /site/m.cpython-311-x86_64-linux-gnu.so: undefined symbol: PyFoo\n"
    ).causes


def test_validation_rejects_a_fix_naming_a_value_the_pattern_does_not_capture(monkeypatch) -> None:
    from cudoctor.explainer import signatures

    good = next(s for s in signatures.load() if s.id == "arch-unsupported/triton-out-of-shared-memory")
    bad = dataclasses.replace(good, id="test/bad-fix", fix=("raise {num_warps}",))
    monkeypatch.setattr(signatures, "load", lambda: (good, bad))
    assert signatures.validate() == [
        "test/bad-fix: fix names {num_warps}, which the pattern does not capture",
        # the step that used {smem_required} is gone, and it is no capture code reads
        "test/bad-fix: captures smem_required, which is no placeholder of its fix or why and not in READ or SHOWN",
    ]
    assert bad.fixes_for({}) == ["raise <num_warps>"]


def test_validation_rejects_a_min_cc_that_does_not_parse(monkeypatch) -> None:
    from cudoctor.explainer import signatures

    good = next(s for s in signatures.load() if s.id == "library-bug/cudnn-frontend-no-execution-plans")
    bad = dataclasses.replace(good, id="test/bad-cc", min_cc="ampere")
    monkeypatch.setattr(signatures, "load", lambda: (good, bad))
    assert signatures.validate() == ["test/bad-cc: min_cc 'ampere' does not parse"]


def test_validation_rejects_a_bad_new_gpu_cc_and_a_fix_for_an_unlisted_cause(monkeypatch) -> None:
    from cudoctor.explainer import signatures

    good = next(s for s in signatures.load() if s.id == "arch-unsupported/cufft-internal-error")
    bad = dataclasses.replace(good, id="test/bad", new_gpu_cc="ada", fix_for={"hardware-fault": ("reseat",)})
    monkeypatch.setattr(signatures, "load", lambda: (good, bad))
    assert signatures.validate() == [
        "test/bad: fix_for names hardware-fault, which causes does not list",
        "test/bad: new_gpu_cc 'ada' does not parse",
    ]


def test_nccl_not_built_in_gives_gloo_and_withholds_the_generic_nccl_steps() -> None:
    exp = explain_text("RuntimeError: Distributed package doesn't have NCCL built in\n", {})
    assert top(exp) == ["multi-gpu-comm", "cpu-only-build"]
    fixes = rank.cause_json(exp.causes, 0)["fix"]
    assert len(fixes) == 1 and "backend='gloo'" in fixes[0]
    assert "torch.version.cuda is None" in rank.cause_json(exp.causes, 1)["fix"][0]
    # a signature without generic_fixes = false keeps its cause's generic steps after its own
    p2p = explain_text(
        "RuntimeError: CUDA error: peer access is not supported between these two devices\n", {}
    )
    assert any("NCCL_DEBUG=INFO" in f for f in rank.cause_json(p2p.causes, 0)["fix"])


@pytest.mark.parametrize("sig", [s for s in signatures.load() if s.why], ids=lambda s: s.id)
def test_a_signatures_own_why_replaces_its_primary_causes_general_why(sig: signatures.Signature) -> None:
    """Each signature with a why: its first example, as the root error, explains itself with that why
    (placeholders filled, none left over) wherever its primary cause is the one shown."""
    exp = rooted(sig.examples[0], sig.id)
    shown = [rank.cause_json(exp.causes, i) for i in range(len(exp.causes))]
    primary = next(c for c in shown if c["id"] == sig.primary)
    assert exp.root is not None and primary["why"] == sig.why_for(exp.root.captures, sig.primary)
    assert "{" not in primary["why"] and primary["why"] != knowledge.cause(sig.primary)["why"]
    assert all(c["why"] == knowledge.cause(c["id"])["why"] for c in shown if c["id"] != sig.primary)


@pytest.mark.parametrize("sig", [s for s in signatures.load() if s.why], ids=lambda s: s.id)
def test_no_example_leaves_a_placeholder_in_its_signatures_why(sig: signatures.Signature) -> None:
    """Every example, not only the first: a capture that is optional or can be empty (Lightning's '[]')
    must not leave '<name>' in the explanation a user reads."""
    for ex in sig.examples:
        m = sig.regex.search(ex)
        assert m is not None
        why = sig.why_for({k: v for k, v in m.groupdict().items() if v}, sig.primary) or ""
        assert not [g for g in sig.regex.groupindex if f"<{g}>" in why], ex
