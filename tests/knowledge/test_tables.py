"""Knowledge tables: validation, lookups, and every signature's examples and counter-examples."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from cudoctor import knowledge, versions
from cudoctor.explainer import corpus, signatures
from tests import regex_samples
from tests.conftest import ROOT, SHARED

EXTRA_CORPUS = [os.path.join(corpus.HERE, name) for name in corpus.EXTRA]


def test_tables_validate() -> None:
    assert knowledge.validate() == []


def test_signatures_validate() -> None:
    assert signatures.validate() == []
    assert signatures.registry_problems() == []


@pytest.mark.parametrize("sig", signatures.load(), ids=lambda s: s.id)
def test_signature_examples(sig: signatures.Signature) -> None:
    for ex in sig.examples:
        assert sig.regex.search(ex), ex
        assert any(a in ex.lower() for a in sig.anchors), ex
    for ex in sig.counter_examples:
        assert not sig.regex.search(ex), ex


def test_every_real_line_a_pattern_matches_holds_one_of_its_anchors() -> None:
    """The prefilter shows a signature only the lines that hold one of its anchors, so a pattern that
    matches more than its anchors cover fails silently (torchvision's "different CUDA major versions"
    did, behind an anchor without "major"). Checked on every line of the real reports in both corpora
    and on every signature's own examples and counter-examples."""
    corpora = [os.path.join(SHARED, "corpus", "dev.jsonl"), *EXTRA_CORPUS]
    lines = {
        ln
        for path in corpora
        if os.path.exists(path)
        for row in map(json.loads, Path(path).read_text().splitlines())
        for ln in row["log"].splitlines()
    }
    lines |= {
        ln
        for sig in signatures.load()
        for text in (*sig.examples, *sig.counter_examples)
        for ln in text.splitlines()
    }
    assert len(lines) > 2000
    gaps = [
        f"{sig.id}: {line[:80]!r}"
        for sig in signatures.load()
        for line in lines
        if sig.regex.search(line) and not any(a in line.lower() for a in sig.anchors)
    ]
    assert gaps == []


@pytest.mark.parametrize("sig", signatures.load(), ids=lambda s: s.id)
def test_every_alternative_of_a_pattern_holds_one_of_its_anchors(sig: signatures.Signature) -> None:
    """The same rule for the lines no corpus holds yet: each alternative of the pattern, optional parts
    with and without, must carry an anchor (numba's bare CUDA_ERROR_OUT_OF_MEMORY did not)."""
    assert regex_samples.unanchored(sig.regex, sig.anchors) == []


def test_the_pattern_samples_cover_alternatives_and_optional_parts() -> None:
    got = regex_samples.samples(r"Blas (?:GEMM|GEMV) launch failed(?: : a\.shape=\d+)?")
    assert got == [
        "Blas GEMM launch failed",
        "Blas GEMM launch failed : a.shape=0",
        "Blas GEMM launch failed : a.shape=00",
        "Blas GEMV launch failed",
        "Blas GEMV launch failed : a.shape=0",
        "Blas GEMV launch failed : a.shape=00",
    ]


def test_every_cause_has_a_check_or_signature() -> None:
    from cudoctor.checks import all_checks

    covered = {c.cause for c in all_checks()} | {cause for s in signatures.load() for cause in s.causes}
    assert set(knowledge.causes()) - covered == set()


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("NVIDIA GeForce RTX 3090", "8.6"),
        ("8x Tesla P40", "6.1"),
        ("A100-SXM4-80GB", "8.0"),
        ("NVIDIA A10G", "8.6"),
        ("NVIDIA H200", "9.0"),
        ("Tesla V100-SXM2-16GB", "7.0"),
        ("GeForce GTX 1080 Ti", "6.1"),
        ("Tesla T4", "7.5"),
        ("NVIDIA GeForce RTX 4090", "8.9"),
        ("DGX Spark (GB10)", "12.1"),
        ("TITAN Xp", "6.1"),
        ("Tesla K80", "3.7"),
        ("GRID K520", "3.0"),  # AWS g2
        ("Nvidia 3090", "8.6"),  # dribnet/pixray#47: the brand, then the model number
        ("NVIDIA 4090", "8.9"),
        # session 44's scenario sets named these; each from NVIDIA's CUDA GPU pages (current and legacy)
        ("NVS 310 with 1 Gb ram", "2.1"),
        ("Quadro 4000", "2.0"),
        ("Quadro P2000", "6.1"),
        ("NVIDIA Quadro P620", "6.1"),
        ("MX250", "6.1"),
        ("GeForce GT 1030", "6.1"),
        ("Quadro M4000", "5.2"),
        ("Quadro M1200", "5.0"),
        ("Tesla M10", "5.0"),
        ("GeForce GT 730 (2048MiB)", "3.5"),
        ("Quadro K2100M", "3.0"),
        ("Quadro T2000", "7.5"),
        ("MX450", "7.5"),
        ("nvidia 2050", "8.6"),  # the RTX 2050 (laptop) is Ampere, not Turing
        ("Tesla V100S", "7.0"),
        ("Tesla M2090", "2.0"),
    ],
)
def test_gpu_names_map_to_compute_capability(name: str, cc: str) -> None:
    hit = knowledge.gpu_cc(name)
    assert hit is not None and hit[0] == cc


@pytest.mark.parametrize("name", ["Quadro RTX 6000", "Quadro K4000", "GeForce GT 730M", "RTX 2060"])
def test_names_near_the_fermi_and_pascal_rows_keep_their_own(name: str) -> None:
    """The rows added for Fermi Quadros and Pascal / Maxwell parts leave the models beside them alone."""
    hit = knowledge.gpu_cc(name)
    assert hit is None or ("Fermi" not in hit[1] and "GP10x" not in hit[1])


@pytest.mark.parametrize(
    ("said", "cc"),
    [("8.6", (8, 6)), ("sm_90a", (9, 0)), ("major: 3 minor: 0", (3, 0)), ("major: 7, minor: 5", (7, 5))],
)
def test_a_compute_capability_as_people_and_tensorflow_write_it(said: str, cc: tuple[int, int]) -> None:
    assert versions.cc_tuple(said) == cc


def test_unknown_gpu_name_is_none() -> None:
    assert knowledge.gpu_cc("Radeon RX 7900") is None


def test_driver_floor_uses_minor_version_compatibility() -> None:
    assert knowledge.driver_floor("12.4") == (
        "525.60.13",
        "CUDA 12.x minor-version compatibility needs driver >= 525.60.13",
    )
    assert knowledge.driver_floor("10.0")[0] == "410.48"  # type: ignore[index]
    assert knowledge.driver_floor("13.0")[0] == "580.65.06"  # type: ignore[index]
    assert knowledge.max_cuda_for_driver("470.82.01") == "11.4"
    # Windows numbers its drivers on its own scale: 526.98 is below CUDA 12.0's 527.41 there
    assert knowledge.max_cuda_for_driver("526.98") == "12.0"
    assert knowledge.max_cuda_for_driver("526.98", windows=True) == "11.8"
    assert knowledge.max_cuda_for_driver("527.41", windows=True) == "12.0"


def test_a_stated_windows_driver_is_read_on_windows_scale() -> None:
    from cudoctor.facts.stated import from_stated

    win = from_stated({"os": "Windows 10", "driver": "526.98"})
    linux = from_stated({"os": "Ubuntu 22.04", "driver": "526.98"})
    assert win.value("driver.cuda_version") == "11.8" and linux.value("driver.cuda_version") == "12.0"
    assert from_stated({"driver": "526.98"}).value("driver.cuda_version") == "12.0"  # OS unknown: Linux's


def test_arch_support_rules() -> None:
    assert knowledge.arch_support((8, 6), ["sm_80"]) == "sass"  # same major, higher minor
    assert knowledge.arch_support((9, 0), ["sm_80"]) == "none"  # never across majors
    assert knowledge.arch_support((9, 0), ["8.0", "8.6+PTX"]) == "ptx"  # PTX JIT forward
    assert knowledge.arch_support((9, 0), ["sm_90a"]) == "sass"
    assert knowledge.arch_support((10, 0), ["sm_90a"]) == "none"  # arch-specific only on that CC
    assert knowledge.arch_support((6, 1), ["7.5", "8.0", "compute_90"]) == "none"


def test_torch_arch_lists() -> None:
    archs, row = knowledge.torch_archs("2.5.1+cu124", "cu124")  # type: ignore[misc]
    assert "9.0" in archs and "8.6" in archs and row["source"]
    assert knowledge.torch_archs("2.13.0", "cu130")[0][0] == "7.5"  # type: ignore[index]
    assert knowledge.torch_variant("2.5.1+cu124", None) == "cu124"
    assert knowledge.torch_variant("1.4.0", "10.1") == "cu101"


def test_tensorflow_tested_builds() -> None:
    row = knowledge.tf_build("1.13.1")
    assert row is not None and (row["cuda"], row["cudnn"]) == ("10.0", "7.4")
    assert knowledge.tf_build("2.15.0")["cuda"] == "12.2"  # type: ignore[index]


@pytest.mark.parametrize(
    ("framework", "version", "cuda", "extra"),
    [
        ("tensorflow", "2.15.0", "12.2", "tensorflow[and-cuda]==2.15.0"),
        ("tensorflow", "2.13.0", "11.8", None),  # [and-cuda] starts at 2.14
        ("jax", "0.4.20", "12.2", "jax[cuda12_pip]==0.4.20"),  # before the cuda12 extra
        ("jax", "0.4.30", "12.3", "jax[cuda12]==0.4.30"),
        ("jax", "0.4.30", "11.8", None),  # the cuda11 extras end at 0.4.25
        ("jax", "0.8.0", "13.0", "jax[cuda13]==0.8.0"),
        ("jax", "0.6.0", "13.0", None),
        ("cupy", "14.0.0", "12.9", "cupy-cuda12x[ctk]==14.0.0"),
        ("cupy", "13.6.0", "12.0", None),  # [ctk] starts at 14.0
        ("torch", "1.12.1", "11.3", None),  # before torch depended on the nvidia-* wheels
    ],
)
def test_framework_libs_step_names_only_an_extra_that_release_has(
    framework: str, version: str, cuda: str, extra: str | None
) -> None:
    step = knowledge.framework_libs_step(framework, version, cuda)
    assert extra in step if extra and step else step is None and extra is None


SIGNATURE_DIR = Path(ROOT, "src", "cudoctor", "knowledge", "signatures")


def test_signature_files_hold_one_cause_each_in_order_of_id() -> None:
    """knowledge/signatures/<cause>.toml: every row's id starts with its file's cause, rows sorted by id,
    no file over 2,000 lines, no section headers ("round N" or any other): a row's history is its source."""
    files = sorted(SIGNATURE_DIR.glob("*.toml"))
    assert [str(p) for p in files] == list(signatures.files())
    assert not Path(ROOT, "src", "cudoctor", "knowledge", "signatures.toml").exists()
    causes = set(knowledge.causes())
    for path in files:
        ids = [row["id"] for row in knowledge.table(f"signatures/{path.stem}")["signature"]]
        assert path.stem in causes, path.name
        assert ids and ids == sorted(ids), path.name
        assert {i.split("/")[0] for i in ids} == {path.stem}, path.name
        lines = path.read_text(encoding="utf-8").splitlines()
        assert len(lines) <= 2000, path.name
        assert not [ln for ln in lines if ln.startswith("# ---") or re.match(r"#.*\bround \d+", ln, re.I)]
    assert [s.id for s in signatures.load()] == sorted(s.id for s in signatures.load())


def test_a_capture_declared_nowhere_fails_validation(monkeypatch) -> None:
    good = next(s for s in signatures.load() if s.id == "env-setting-invalid/torch-alloc-conf-unknown-option")
    typo = dataclasses.replace(
        good,
        id="test/typo",
        regex=re.compile(r"Unrecognized CachingAllocator option: (?P<alloc_kye>\S+)"),
        fix=(),
        fix_for={},
        why=None,
    )
    placeholder = dataclasses.replace(typo, id="test/placeholder", fix=("unset {alloc_kye}",))
    monkeypatch.setattr(signatures, "load", lambda: (good, typo, placeholder))
    assert [p for p in signatures.validate() if "test/" in p] == [
        "test/typo: captures alloc_kye, which is no placeholder of its fix or why and not in READ or SHOWN"
    ]


def test_a_declared_capture_no_signature_provides_fails_validation(monkeypatch) -> None:
    monkeypatch.setitem(signatures.READ, "gpu_count", "rank.py: a made-up rule")
    monkeypatch.setitem(signatures.CODE_IDS, "gpu-oom/no-such-signature", "rank.py: a made-up rule")
    assert signatures.registry_problems() == [
        "READ declares gpu_count, which no signature captures",
        "code names signature gpu-oom/no-such-signature, which no row has",
    ]


CODE_READS = re.compile(r"""\b(?:caps|captures)(?:\.get\(|\[)\s*["'](\w+)["']""")
CODE_IDS = re.compile(r"""\.id\s*(?:==|!=)\s*["']([\w-]+/[\w-]+)["']|\.id\s+in\s+\(([^)]*)\)""")


def _sources() -> dict[str, str]:
    pkg = Path(ROOT, "src", "cudoctor")
    return {str(p.relative_to(pkg)): p.read_text(encoding="utf-8") for p in pkg.rglob("*.py")}


def test_every_capture_code_reads_is_declared_and_every_declared_one_is_read() -> None:
    """The names code looks up in a match's captures are READ's keys; each READ key is in the code."""
    sources = _sources()
    read = {name for text in sources.values() for name in CODE_READS.findall(text)}
    assert read - set(signatures.READ) == set()
    code = "\n".join(text for path, text in sources.items() if path != "explainer/signatures.py")
    assert [name for name in signatures.READ if f'"{name}"' not in code] == []


def test_signature_ids_that_code_names_exist() -> None:
    ids = {s.id for s in signatures.load()}
    named = {
        i
        for path, text in _sources().items()
        if path != "explainer/signatures.py"
        for one, many in CODE_IDS.findall(text)
        for i in (one, *re.findall(r"[\w-]+/[\w-]+", many))
        if i
    }
    assert named - set(signatures.CODE_IDS) == set()
    assert set(signatures.CODE_IDS) - ids == set()


@pytest.mark.parametrize(
    ("first", "later"),
    [(first, later) for first, named in signatures.TRIED_BEFORE.items() for later in named],
)
def test_signatures_tried_first_win_their_ties(first: str, later: str) -> None:
    """Each pair of TRIED_BEFORE matches one line of an example or a corpus report, equally specific,
    and the root error of that line alone is the one tried first."""
    import io

    from cudoctor.explainer import corpus, rank, scan

    by_id = {s.id: s for s in signatures.load()}
    a, b = by_id[first], by_id[later]
    assert (a.specificity, a.warning) == (b.specificity, b.warning)
    texts = [*a.examples, *b.examples, *(ln for r in corpus.load() for ln in r.log.splitlines())]
    line = next(t for t in texts if a.regex.search(t) and b.regex.search(t))
    result = scan.scan(io.BytesIO(line.encode("utf-8")))
    matches = rank.drop_refined(sorted(result.matches, key=lambda m: m.line))
    root = rank.pick_root(matches)
    assert root is not None and root.sig.id == first


@pytest.mark.parametrize(
    "sig_id", ["arch-unsupported/named-symbol-not-found", "driver-too-old/numba-linker-unknown-error"]
)
def test_a_signatures_own_examples_are_rooted_at_it(sig_id: str) -> None:
    """Ties on one line go by id unless TRIED_BEFORE says otherwise: these two lost their own examples
    to nccl-error and cuda-unknown-error while the order came from the old file's layout."""
    import io

    from cudoctor.explainer import rank, scan
    from cudoctor.model import Snapshot

    sig = next(s for s in signatures.load() if s.id == sig_id)
    for example in sig.examples:
        exp = rank.explain(scan.scan(io.BytesIO(example.encode())), Snapshot())
        assert exp.root is not None and exp.root.sig.id == sig_id, example


def test_the_architectures_each_toolkit_builds() -> None:
    assert knowledge.toolkit_cc_range("7.5") == ((2, 0), (5, 3))  # CMake's initial set, CUDA 7.0
    assert knowledge.toolkit_cc_range("8.0") == ((2, 0), (6, 2))  # sm_60-62 come with CUDA 8
    assert knowledge.toolkit_cc_range("11.0") == ((3, 5), (8, 0)) and knowledge.toolkit_cc_range("11.1")[
        1
    ] == (8, 6)  # type: ignore[index]
    assert knowledge.toolkit_cc_range("6.5") is None  # older than the table


def test_where_nvidias_installer_puts_a_toolkit() -> None:
    assert knowledge.toolkit_root("10.0.130") == "/usr/local/cuda-10.0"
    assert (
        knowledge.toolkit_root("11.8", windows=True)
        == "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8"
    )


def test_applications_name_one_of_the_four_frameworks_and_match_their_own_names() -> None:
    rows = knowledge.table("applications")["application"]
    assert rows and all(
        r["framework"] in ("torch", "tensorflow", "jax", "cupy") and r["source"] for r in rows
    )
    for name in ("ComfyUI", "stable-diffusion-webui", "vLLM", "ultralytics", "mmcv-full 1.7.0", "GPT-SoVITS"):
        assert knowledge.application_framework(name) == "torch", name
    for name in ("TensorRT", "onnxruntime-gpu", "my comfy chair"):
        assert knowledge.application_framework(name) is None, name


def test_the_pypi_default_torch_is_the_cuda_its_wheel_pins() -> None:
    """tools/read_pypi_torch.py read each default Linux wheel's metadata (nvidia-cuda-runtime-cu12==12.4.127 for
    2.6.0, cuda-toolkit[cudart]==13.0.2 for 2.14): where the table only believed a default, the newest variant was
    taken, which for 2.6.0 (cu126) and 2.10.0 (cu130) is not what `pip install torch` gives."""
    from cudoctor import knowledge

    wheel_pins = {"2.1.2": "cu121", "2.4.1": "cu121", "2.5.1": "cu124", "2.6.0": "cu124", "2.10.0": "cu128"}
    assert {v: knowledge.torch_default_variant(v) for v in wheel_pins} == wheel_pins
    assert knowledge.torch_default_variant("2.14.1") == "cu130"


def test_the_torch_a_package_release_pins() -> None:
    from cudoctor import knowledge

    assert (
        knowledge.torch_pin("vllm", "0.4.3") == "2.3.0"
        and knowledge.torch_pin("vLLM", "0.6.3.post1") == "2.4.0"
    )
    assert knowledge.torch_pin("xformers", "0.0.26.post1") == "2.3.0"
    assert knowledge.torch_pin("vllm", "0.0.1") is None and knowledge.torch_pin("numpy", "2.0.0") is None


def _ranged(blob: bytes) -> Any:
    """An index server's answer to the range requests tools/read_tf_archs.py sends, served from bytes."""

    def get(url: str, start: int | None = None, end: int | None = None, tail: int | None = None) -> bytes:
        if tail is not None:
            return blob[-tail:]
        assert start is not None and end is not None
        return blob[start : end + 1]

    return get


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (  # 2.4 and later: an OrderedDict of tuples
            "build_info = collections.OrderedDict([('cuda_compute_capabilities', ['sm_60', 'sm_89', 'compute_90']),"
            " ('is_cuda_build', True)])",
            ["sm_60", "sm_89", "compute_90"],
        ),
        (
            "build_info = {'cuda_compute_capabilities': ['sm_35', 'compute_70'], 'cuda_version': '10.1'}",
            ["sm_35", "compute_70"],
        ),
        ("build_info = collections.OrderedDict([('is_cuda_build', False)])", None),  # tensorflow-cpu
    ],
)
def test_read_tf_archs_reads_the_one_member_of_a_wheel(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, text: str, want: list[str] | None
) -> None:
    """tools/read_tf_archs.py reads build_info.py out of a 500 MB wheel by ranges; here from a real zip built with
    a large member in front of it, deflated as wheels are."""
    import io
    import os
    import zipfile

    from tests.conftest import load_tool

    tool = load_tool("read_tf_archs")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("tensorflow/libtensorflow_framework.so.2", os.urandom(200_000))
        zf.writestr(
            tool.MEMBER, '"""Auto-generated module providing information about the build."""\n' + text
        )
        zf.writestr("tensorflow-2.x.dist-info/RECORD", "x" * 70_000)
    monkeypatch.setattr(tool, "_get", _ranged(buf.getvalue()))
    assert tool.archs_of(tool.read_member("https://files.example/tensorflow.whl")) == want
    with pytest.raises(RuntimeError, match="not in the wheel"):
        tool.read_member("https://files.example/tensorflow.whl", "tensorflow/python/other.py")


def test_tensorflow_wheels_from_2_4_carry_the_arch_list_read_from_them() -> None:
    from cudoctor import knowledge

    rows = [r for r in knowledge.table("tensorflow")["build"] if r["version"].startswith("2.")]
    read = [r for r in rows if (versions.parse(r["version"]) or ()) >= (2, 3)]
    assert read and all(r.get("archs") and "build_info.py" in r["archs_source"] for r in read)
    assert knowledge.tf_build("2.17.1")["archs"][0] == "sm_60"  # type: ignore[index]
