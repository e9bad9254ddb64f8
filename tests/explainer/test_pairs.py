"""Packages that must come in matched pairs: jax and jaxlib (the messages are made here by the installed
jax's own version check), xformers and the torch it was built for, torchvision's compiled ops. Other
lines are from the threads each signature's source names."""

from __future__ import annotations

import pytest

from tests.conftest import explained, first, ids, stated


def jax_refuses(jax_version: str, jaxlib_version: str, minimum: str) -> str:
    """What the installed jax's own check raises for this pair (jax/_src/lib/__init__.py)."""
    lib = pytest.importorskip("jax._src.lib")
    with pytest.raises(RuntimeError) as raised:
        lib.check_jaxlib_version(jax_version, jaxlib_version, minimum)
    return f"RuntimeError: {raised.value}\n"


def test_a_jaxlib_newer_than_jax_names_the_pair_to_install() -> None:
    exp = explained(jax_refuses("0.4.6", "0.4.14", "0.4.4"))
    assert exp.root is not None and exp.root.sig.id == "binary-incompatible/jaxlib-newer-than-jax"
    got = first(exp)
    assert got["id"] == "binary-incompatible"
    assert "jaxlib 0.4.14 is newer than jax 0.4.6" in str(got["why"])
    assert "'jax==0.4.14' 'jaxlib==0.4.14'" in str(got["fix"]) and "'jaxlib==0.4.6'" in str(got["fix"])


def test_a_jaxlib_older_than_jax_needs_says_the_minimum() -> None:
    exp = explained(jax_refuses("0.10.2", "0.10.0", "0.10.1"))
    assert exp.root is not None and exp.root.sig.id == "binary-incompatible/jaxlib-older-than-jax"
    assert "'jaxlib>=0.10.1'" in str(first(exp)["fix"])


def test_jax_importing_a_name_its_other_half_lacks_is_the_pair_not_user_code() -> None:
    exp = explained("ImportError: cannot import name 'get_metadata' from 'jax._src.cloud_tpu_init'\n")
    assert ids(exp)[0] == "binary-incompatible"
    # a public name gone from jax is an old library calling a removed API, not a broken pair
    assert explained("ImportError: cannot import name 'tree_multimap' from 'jax.tree_util'\n").root is None


def test_installed_versions_that_break_the_pair_confirm_it_without_reordering() -> None:
    pins = [{"package": "jax", "version": "0.4.6", "requires": "jaxlib", "spec": "<=0.4.6,>=0.4.4"}]
    snap = stated({}, python__pins=pins, python__packages={"jax": "0.4.6", "jaxlib": "0.4.14"})
    exp = explained(jax_refuses("0.4.6", "0.4.14", "0.4.4"), snap)
    assert ids(exp)[:2] == ["binary-incompatible", "multiple-toolkits"]
    assert any("jaxlib 0.4.14 is installed" in r for r in exp.causes[0].reasons)  # the finding's other side


@pytest.mark.parametrize(
    ("line", "sig_id", "cause", "says"),
    [
        (  # invoke-ai/InvokeAI#6590
            "    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.0.1+cu118)\n",
            "multiple-toolkits/xformers-built-for-other-torch",
            "multiple-toolkits",
            "built for torch 2.1.2+cu121 with CUDA 12.1, and torch 2.0.1+cu118 is installed",
        ),
        (  # invoke-ai/InvokeAI#4788
            "    PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.0.1+cpu)\n",
            "cpu-only-build/xformers-on-cpu-torch",
            "cpu-only-build",
            "the CPU-only build (2.0.1+cpu)",
        ),
        (  # Vchitect/SEINE#21, an Apple M1
            "    PyTorch 2.0.1 with CUDA 1106 (you have 2.0.1)\n",
            "cpu-only-build/xformers-same-torch-without-cuda",
            "cpu-only-build",
            "what differs is the build",
        ),
    ],
)
def test_xformers_says_which_torch_it_was_built_for(line: str, sig_id: str, cause: str, says: str) -> None:
    text = "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n" + line
    exp = explained(text)
    assert exp.root is not None and exp.root.sig.id == sig_id
    assert [m.sig.id for m in exp.matches] == [sig_id]  # the precise reading replaces the general one
    got = first(exp)
    assert got["id"] == cause and says in str(got["why"])


def test_a_cpu_torch_under_xformers_gets_the_index_of_the_cuda_it_was_built_with() -> None:
    exp = explained("    PyTorch 2.0.1+cu118 with CUDA 1108 (you have 2.0.1+cpu)\n")
    assert "https://download.pytorch.org/whl/cu118" in str(first(exp)["fix"])
    exp = explained("    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.2+cpu)\n")
    assert "https://download.pytorch.org/whl/cu121" in str(first(exp)["fix"])


def test_the_python_line_of_the_same_warning_is_not_a_torch_mismatch() -> None:
    assert explained("    Python  3.10.13 (you have 3.10.12)\n").root is None


def test_torchvisions_custom_ops_that_did_not_load_are_a_torch_pair() -> None:
    exp = explained(
        "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and torchvision "
        "versions are incompatible, or if you had errors while compiling torchvision from source.\n"
    )
    assert exp.root is not None and exp.root.sig.id == "requirements-unmet/torchvision-operator-missing"
    # torchvision pins the torch it was built for in its requirements: another torch beside it is a requirement unmet
    assert ids(exp)[:2] == ["requirements-unmet", "binary-incompatible"]


def _no_operator(*reasons: str) -> str:
    """xformers' dispatch error with the reasons each operator gives (as in the threads the signatures name)."""
    lines = [
        "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:",
        "     query       : shape=(1, 2, 1, 40) (torch.float32)",
        "`flshattF@0.0.0` is not supported because:",
        *reasons,
        "    dtype=torch.float32 (supported: {torch.bfloat16, torch.float16})",
        "`cutlassF` is not supported because:",
        *reasons,
    ]
    return "\n".join(lines) + "\n"


def test_xformers_without_its_cuda_part_is_the_install_not_the_dtype_or_the_gpu() -> None:
    exp = explained(
        _no_operator(
            "    xFormers wasn't build with CUDA support",
            "    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)",
            "    operator wasn't built - see `python -m xformers.info` for more info",
        )
    )
    assert exp.root is not None and exp.root.sig.id == "multiple-toolkits/xformers-extension-not-loaded"
    assert ids(exp) == ["multiple-toolkits", "binary-incompatible", "cpu-only-build"]
    assert "arch-unsupported" not in [c.id for c in exp.causes] and "dtype-mismatch" not in ids(exp)
    assert "python -m xformers.info" in str(first(exp)["fix"])


def test_xformers_given_cpu_tensors_says_move_them_or_get_a_cuda_torch() -> None:
    exp = explained(_no_operator("    device=cpu (supported: {'cuda'})"))
    assert exp.root is not None and exp.root.sig.id == "device-mismatch/xformers-inputs-on-cpu"
    assert ids(exp)[:2] == ["device-mismatch", "cpu-only-build"]
    cpu_torch = stated({"framework_version": "torch 2.0.0+cpu", "gpu": "A100"})  # kohya-ss/sd-scripts#412
    assert (
        ids(explained(_no_operator("    device=cpu (supported: {'cuda'})"), cpu_torch))[0] == "cpu-only-build"
    )


def test_the_dispatch_error_alone_points_at_the_reasons_under_it() -> None:
    exp = explained(
        "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"
    )
    assert exp.root is not None and exp.root.sig.id == "multiple-toolkits/xformers-no-operator"
    assert "device=cpu" in " ".join(str(f) for f in first(exp)["fix"])  # type: ignore[attr-defined]
