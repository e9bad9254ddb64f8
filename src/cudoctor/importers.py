"""Read other people's reports into a Snapshot: cudoctor JSON, `python -m torch.utils.collect_env`,
`nvidia-smi -q` (text or XML), `pip list` / `pip freeze`, `conda list`.

Every format is recognised from its content; what each one says becomes stated-style facts with
the format as source, so every check runs on it. Unrecognised or malformed input raises
InputError with one line (exit 2).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from cudoctor import pasted, textfiles, versions
from cudoctor.facts.companions import from_version_tags
from cudoctor.facts.packages import normalise
from cudoctor.facts.stated import from_stated
from cudoctor.inputs import InputError
from cudoctor.model import Snapshot, known
from cudoctor.versions import cuda_from_variant

MAX_BYTES = 64 << 20
# a `conda list` row: name, version, build string (py38_0, h94faf87_0, py3.8_cuda11.3_cudnn8.2.0_0), channel
CONDA_ROW = re.compile(
    r"^[A-Za-z0-9_.-]+\s+\d[\w.+!-]*\s+(?:py[\w.]*|h[0-9a-f]{7}\w*|\d+|cpu|cuda|<pip>|pypi_0)(?:\s+\S+)?\s*$",
    re.M,
)


def read_text(path: str) -> str:
    import os

    if os.path.isdir(path):
        raise InputError(f"{path} is a directory, not a report")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{path} does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise InputError(f"{path} is larger than {MAX_BYTES >> 20} MiB: not a report cudoctor reads")
    if b"\x00" in raw[:8192] and textfiles.utf16_encoding(raw[:512]) is None:
        raise InputError(f"{path} looks like a binary file, not a report")
    return textfiles.decode(raw).replace("\r\n", "\n")


def detect(text: str) -> str:
    head = text.lstrip()[:4096]
    if head.startswith("{"):
        return "json"
    if head.startswith("<?xml") or head.startswith("<nvidia_smi_log"):
        return "nvidia-smi-xml"
    if "==============NVSMI LOG==============" in head:
        return "nvidia-smi"
    if pasted.looks_like_cupy_config(head):
        return "cupy-show-config"
    if pasted.looks_like_jax_info(head):
        return "jax-environment-info"
    if re.search(r"^(Collecting environment information|PyTorch version:)", head, re.M):
        return "collect_env"
    if pasted.looks_like_smi_table(head):
        return "nvidia-smi-table"
    if re.search(r"^# packages in environment at", head, re.M) or len(CONDA_ROW.findall(head)) >= 2:
        return "conda-list"
    if re.search(r"^Package\s+Version\b", head, re.M) or re.search(r"^[A-Za-z0-9_.-]+==\S+\s*$", head, re.M):
        return "pip-list"
    raise InputError(
        "unrecognised report format (expected cudoctor JSON, collect_env, nvidia-smi or nvidia-smi -q, "
        "cupy.show_config(), jax.print_environment_info(), pip list or conda list)"
    )


def load_report(path: str) -> Snapshot:
    text = read_text(path)
    if not text.strip():
        raise InputError(f"{path} is empty")
    kind = detect(text)
    parser = {
        "json": from_json,
        "nvidia-smi-xml": from_nvsmi_xml,
        "nvidia-smi": from_nvsmi_text,
        "collect_env": from_collect_env,
        "cupy-show-config": lambda text: _retag(pasted.from_cupy_config(text), "cupy.show_config()"),
        "jax-environment-info": lambda text: _retag(
            pasted.from_jax_info(text), "jax.print_environment_info()"
        ),
        "nvidia-smi-table": pasted.from_smi_table,
        "conda-list": from_conda_list,
        "pip-list": from_pip_list,
    }[kind]
    snap = parser(text)
    snap.add(known("report.format", kind, f"file:{path}"))
    return snap


def from_json(text: str) -> Snapshot:
    try:
        data = textfiles.load_json(text)
    except textfiles.JSONInputError as exc:
        raise InputError(f"{exc}: truncated or corrupted?") from None
    if isinstance(data, dict) and isinstance(data.get("snapshot"), dict):
        data = data["snapshot"]
    try:
        return Snapshot.from_json(data)
    except ValueError as exc:
        raise InputError(f"JSON but not a cudoctor report: {exc}") from None


# ---------------------------------------------------------------- collect_env
def _field(text: str, label: str) -> str | None:
    m = re.search(rf"^{re.escape(label)}:\s*(.*)$", text, re.M)
    value = m.group(1).strip() if m else None
    return None if value in (None, "", "N/A", "None", "No CUDA", "Could not collect") else value


def from_collect_env(text: str) -> Snapshot:
    stated: dict[str, str] = {}
    torch_v = _field(text, "PyTorch version")
    cuda_build = _field(text, "CUDA used to build PyTorch")
    if torch_v:
        stated["framework_version"] = f"torch {torch_v}" + ("" if cuda_build or "+" in torch_v else "+cpu")
    if cuda_build:
        stated["framework_cuda"] = cuda_build
    gpus = re.findall(r"^GPU \d+: (.+?)(?: \(UUID: [^)]*\))?$", text, re.M)
    single = _field(text, "GPU models and configuration")
    stated["gpu"] = ", ".join(gpus) if gpus else (single or "")
    for key, label in (
        ("driver", "Nvidia driver version"),
        ("system_cuda", "CUDA runtime version"),
        ("os", "OS"),
        ("python", "Python version"),
    ):
        value = _field(text, label)
        if value:
            stated[key] = value
    cudnn = re.findall(
        r"libcudnn\.so\.(\d+\.\d+\.\d+)|cudnn64_(\d+)\.dll|^cuDNN version:\s*(\d+\.\d+\.\d+)", text, re.M
    )
    versions = sorted({a or b or c for a, b, c in cudnn})
    if versions:
        stated["cudnn"] = ", ".join(versions)
    snap = from_stated({k: v for k, v in stated.items() if v}, framework_hint="torch")
    pkgs = dict(re.findall(r"^\[(?:pip3?|conda)\]\s+([A-Za-z0-9_.-]+)(?:==|\s+)(\S+)", text, re.M))
    if pkgs:
        snap.add(known("python.packages", pkgs, "collect_env"))
        snap.add(from_version_tags({normalise(k): v for k, v in pkgs.items()}))
    return _retag(snap, "collect_env")


def _retag(snap: Snapshot, fmt: str) -> Snapshot:
    """Mark every fact as coming from the imported report."""
    out = Snapshot(origin=f"report:{fmt}")
    for fact in snap:
        out.add(known(fact.key, fact.value, f"{fmt}: {fact.source}")) if fact.known else out.add(fact)
    return out


# ---------------------------------------------------------------- nvidia-smi
def from_nvsmi_text(text: str) -> Snapshot:
    snap = Snapshot(origin="report:nvidia-smi")
    driver = re.search(r"^Driver Version\s*:\s*(\S+)", text, re.M)
    cuda = re.search(r"^CUDA Version\s*:\s*(\S+)", text, re.M)
    if driver:
        snap.add(known("driver.version", driver.group(1), "nvidia-smi -q"))
    if cuda:
        snap.add(known("driver.cuda_version", cuda.group(1), "nvidia-smi -q"))
    gpus = []
    for i, block in enumerate(re.split(r"^GPU [0-9A-Fa-f:.]+\s*$", text, flags=re.M)[1:]):

        def get(label: str, section: str | None = None, block: str = block) -> str | None:
            scope = block
            if section:
                m = re.search(rf"^\s*{re.escape(section)}\s*$\n((?:^\s{{8,}}.*\n?)+)", block, re.M)
                scope = m.group(1) if m else ""
            m = re.search(rf"^\s*{re.escape(label)}\s*:\s*(.+?)\s*$", scope, re.M)
            return m.group(1) if m else None

        rec = pasted.gpu_record(
            i,
            get("Product Name"),
            get("GPU UUID"),
            get("Total", "FB Memory Usage"),
            get("Used", "FB Memory Usage"),
            get("Free", "FB Memory Usage"),
        )
        rec["compute_mode"] = get("Compute Mode")
        rec.update(pasted.display_fields(get("Display Active"), get("Current", "Driver Model")))
        rec["processes"] = _text_processes(block)
        unc = get("Uncorrectable Error", "Remapped Rows")
        rec["remapped_rows"] = [0, versions.integer(unc), 0, 0] if unc and unc.isdigit() else None
        gpus.append(rec)
    if not driver and not gpus:
        raise InputError("nvidia-smi -q text without a driver version or any GPU: truncated?")
    snap.add(known("gpu.devices", gpus, "nvidia-smi -q"))
    return snap


def _text_processes(block: str) -> list[dict[str, Any]]:
    """The 'Processes' section of one GPU in `nvidia-smi -q`: Process ID, Type, Name, Used GPU Memory."""
    m = re.search(r"^\s*Processes\s*$\n((?:^\s{8,}.*\n?)+)", block, re.M)
    if not m:
        return []
    out = []
    for entry in re.split(r"^\s*Process ID\s*:", m.group(1), flags=re.M)[1:]:
        pid, _, rest = entry.partition("\n")
        fields = dict(re.findall(r"^\s*(Type|Name|Used GPU Memory)\s*:\s*(.+?)\s*$", rest, re.M))
        if pid.strip().isdigit():
            out.append(
                {
                    "pid": versions.integer(pid),
                    "used_mib": pasted.mib(fields.get("Used GPU Memory")),
                    "name": fields.get("Name"),
                    "type": fields.get("Type"),
                }
            )
    return out


def from_nvsmi_xml(text: str) -> Snapshot:
    try:
        root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", text))
    except ET.ParseError as exc:
        raise InputError(f"nvidia-smi XML does not parse: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise InputError(f"XML whose root is <{root.tag}>, not nvidia-smi's <nvidia_smi_log>")
    snap = Snapshot(origin="report:nvidia-smi-xml")
    for key, tag in (("driver.version", "driver_version"), ("driver.cuda_version", "cuda_version")):
        value = root.findtext(tag)
        if value:
            snap.add(known(key, value.strip(), "nvidia-smi -q -x"))
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        rec = pasted.gpu_record(
            i,
            g.findtext("product_name"),
            g.findtext("uuid"),
            g.findtext("fb_memory_usage/total"),
            g.findtext("fb_memory_usage/used"),
            g.findtext("fb_memory_usage/free"),
        )
        rec["processes"] = [
            {
                "pid": versions.integer(p.findtext("pid") or "0"),
                "used_mib": pasted.mib(p.findtext("used_memory")),
                "name": (p.findtext("process_name") or "").strip() or None,
                "type": (p.findtext("type") or "").strip() or None,
            }
            for p in g.findall("processes/process_info")
        ]
        rec["compute_mode"] = (g.findtext("compute_mode") or "").strip() or None
        rec.update(pasted.display_fields(g.findtext("display_active"), g.findtext("driver_model/current_dm")))
        gpus.append(rec)
    snap.add(known("gpu.devices", gpus, "nvidia-smi -q -x"))
    return snap


# ---------------------------------------------------------------- package lists
def _from_packages(pkgs: dict[str, str], fmt: str, extra: dict[str, str] | None = None) -> Snapshot:
    norm = {normalise(k): v for k, v in pkgs.items()}
    stated: dict[str, str] = dict(extra or {})
    if "torch" in norm or "pytorch" in norm:
        stated.setdefault("framework_version", f"torch {norm.get('torch') or norm.get('pytorch')}")
    elif any(k in norm for k in ("tensorflow", "tensorflow-gpu", "tensorflow-cpu")):
        name = next(k for k in ("tensorflow-gpu", "tensorflow-cpu", "tensorflow") if k in norm)
        stated.setdefault("framework_version", f"{name} {norm[name]}")
    elif "jaxlib" in norm:
        plugin = next((k for k in norm if re.match(r"jax-cuda\d+-plugin", k)), None)
        stated.setdefault("framework_version", f"jax {norm['jaxlib']}" + (f" [{plugin}]" if plugin else ""))
    cudnn = next((v for k, v in norm.items() if k.startswith("nvidia-cudnn")), None) or norm.get("cudnn")
    if cudnn:
        stated.setdefault("cudnn", cudnn)
    snap = from_stated(stated)
    snap.add(known("python.packages", norm, fmt))
    snap.add(from_version_tags(norm))
    wheels = [{"name": k, "version": v} for k, v in norm.items() if k.startswith(("nvidia-", "cuda-"))]
    snap.add(known("python.nvidia_wheels", wheels, fmt))
    return _retag(snap, fmt)


def from_pip_list(text: str) -> Snapshot:
    pkgs = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)\s*$", text, re.M))
    table = text.split("\n")
    for line in table:
        m = re.match(r"^([A-Za-z0-9_.-]+)\s+(\d\S*)(?:\s+\S.*)?$", line)
        if m and m.group(1) != "Package":
            pkgs.setdefault(m.group(1), m.group(2))
    if not pkgs:
        raise InputError("pip list without any package line")
    return _from_packages(pkgs, "pip list")


def from_conda_list(text: str) -> Snapshot:
    pkgs: dict[str, str] = {}
    extra: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        if len(parts) < 2:
            continue
        name, version, build = parts[0], parts[1], parts[2] if len(parts) > 2 else ""
        pkgs[name] = version
        m = re.search(r"cuda(\d+)\.?(\d+)", build)
        if name in ("pytorch", "torch") and m:
            extra["framework_cuda"] = f"{m.group(1)}.{m.group(2)}"
            c = re.search(r"cudnn(\d+(?:\.\d+)*)", build)
            if c:
                extra["cudnn"] = c.group(1)
        if name in ("pytorch", "torch") and re.search(r"\bcpu\b|cpu_", build):
            pkgs[name] = version + "+cpu"
        tag = re.search(r"(?:^|_)(cu\d+|cpu)(?:_|$)", build)
        if name in ("torchvision", "torchaudio") and tag:  # the pytorch channel's py310_cu121 / py310_cpu
            pkgs[name] = f"{version}+{tag.group(1)}"
        if name in ("cudatoolkit", "cuda-toolkit", "cuda-runtime", "cuda-cudart"):
            extra["system_cuda"] = version
        if re.match(r"cu\d+", build):
            extra.setdefault("framework_cuda", cuda_from_variant(build.split("_")[0]) or "")
    if not pkgs:
        raise InputError("conda list without any package line")
    return _from_packages(pkgs, "conda list", {k: v for k, v in extra.items() if v})
