"""torch ↔ the packages compiled against it (torchvision, torchaudio): the CUDA each was built for.

torchvision refuses to import when its CUDA major differs from torch's; a CUDA build on a CPU-only
torch cannot load its operators (they link libtorch_cuda.so), and a CPU build on a CUDA torch loads
but has no CUDA kernels. Read from package files (facts/companions.py), before anything is imported.
"""

from __future__ import annotations

from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import check, finding
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "Frameworks"
CAUSE = "multiple-toolkits"
INDEX = "https://download.pytorch.org/whl"


@check("companion-cuda-mismatch", CAUSE, LAYER, requires=("python.torch_companions", "framework.torch"))
def companion_cuda_mismatch(snap: Snapshot) -> list[Finding]:
    """torchvision or torchaudio was built for another CUDA than torch (or for CUDA beside a CPU-only
    torch, or without CUDA beside a CUDA torch): read from the libcudart each one's library links, or
    in a report from the +cuXY / +cpu tags of the versions."""
    torch = snap.value("framework.torch") or {}
    if torch.get("build") not in ("cuda", "cpu"):
        return []  # a ROCm torch pairs with ROCm builds, which link no libcudart either way
    torch_cuda = str(torch.get("cuda") or "") if torch.get("build") == "cuda" else ""
    tag = "cu" + torch_cuda.replace(".", "") if torch_cuda else "cpu"  # the index of torch's own build
    out = []
    for name, info in sorted((snap.value("python.torch_companions") or {}).items()):
        problem = _mismatch(name, info, torch_cuda, str(torch.get("version") or "torch"))
        if problem is None:
            continue
        severity, title = problem
        out.append(
            finding(
                "companion-cuda-mismatch",
                CAUSE,
                severity,
                title,
                LAYER,
                evidence=[
                    f"{name}: {info.get('evidence')}",
                    f"torch {torch.get('version')}: CUDA {torch_cuda or 'none (CPU-only build)'}",
                ],
                fix=[
                    f"Install torch and {name} together from one index so pip pairs their builds: pip install "
                    f"--force-reinstall 'torch=={str(torch.get('version') or '').split('+')[0]}' {name} "
                    f"--index-url {INDEX}/{tag}",
                    f'Check the pair: python -c "import torch, {name}; print(torch.__version__, '
                    f'{name}.__version__)" shows the same +cu (or +cpu) tag on both',
                ],
                subject="torch",  # shown under PyTorch, the framework the pair belongs to
                also=["binary-incompatible"],
                generic_fixes=False,
            )
        )
    return out


def _mismatch(
    name: str, info: dict[str, Any], torch_cuda: str, torch_version: str
) -> tuple[Severity, str] | None:
    """Severity and title when `name` was built for another CUDA than torch (or with or without one)."""
    if info.get("build_unknown"):
        return None  # stated without a +cuXY / +cpu tag: its build is not known
    major = info.get("cuda_major")
    label = f"{name} {info.get('version')}"
    if torch_cuda and major and torch_cuda.split(".")[0] != major:
        return (
            Severity.ERROR,
            f"{label} was built for CUDA {major} and torch {torch_version} for CUDA {torch_cuda}: "
            f"{name} refuses to load ('compiled with different CUDA major versions')",
        )
    if torch_cuda and _refuses_minor(name, info) and info.get("cuda") not in (None, torch_cuda):
        return (
            Severity.ERROR,
            f"{label} was built for CUDA {info['cuda']} and torch {torch_version} for CUDA {torch_cuda}: "
            f"this {name} refuses another minor too ('compiled with different CUDA versions')",
        )
    if not torch_cuda and major:
        return (
            Severity.ERROR,
            f"{label} is a CUDA {major} build and torch {torch_version} has no CUDA: {name}'s operators "
            "link libtorch_cuda.so, which a CPU-only torch lacks, so they do not load "
            f'("operator {name}::... does not exist")',
        )
    if torch_cuda and not major:
        return (
            Severity.WARNING,
            f"{label} is a build without CUDA and torch {torch_version} uses CUDA {torch_cuda}: {name}'s "
            f"operators have no CUDA kernels (\"Could not run '{name}::...' with arguments from the 'CUDA' "
            'backend" on GPU tensors)',
        )
    return None


def _refuses_minor(name: str, info: dict[str, Any]) -> bool:
    """Whether this release refuses another CUDA minor too: torchvision before 0.16 (read in the 0.15.2
    and 0.16.0 wheels' extension.py), torchaudio up to 2.11 at least (its 2.11.0 wheel compares
    major.minor; pytorch/audio#4226 relaxed it later). A minor is known only from a version tag."""
    version = versions.parse(str(info.get("version"))) or (0,)
    if name == "torchvision":
        return (0,) < version < (0, 16)
    return name == "torchaudio" and (0,) < version < (2, 12)


@check(
    "companion-release-mismatch",
    "requirements-unmet",
    LAYER,
    requires=("python.torch_companions", "framework.torch"),
)
def companion_release_mismatch(snap: Snapshot) -> list[Finding]:
    """torchvision of another release than torch's (torchvision pins the torch it was built for: 0.20 is
    torch 2.5's): its compiled operators do not load ('operator torchvision::nms does not exist'). From
    the torch.toml [[torchvision]] table; a release the table lacks says nothing."""
    torch = snap.value("framework.torch") or {}
    version = str(torch.get("version") or "")
    info = (snap.value("python.torch_companions") or {}).get("torchvision") or {}
    own = knowledge.torchvision_pair(torch_version=version) if version else None
    theirs = knowledge.torchvision_pair(torchvision=str(info.get("version") or "")) if info else None
    if own is None or theirs is None or own["torch"] == theirs["torch"]:
        return []
    torch_cuda = str(torch.get("cuda") or "") if torch.get("build") == "cuda" else ""
    tag = "cu" + torch_cuda.replace(".", "") if torch_cuda else "cpu"
    plain = version.split("+")[0]
    return [
        finding(
            "companion-release-mismatch",
            "requirements-unmet",
            Severity.ERROR,
            f"torchvision {info['version']} is torch {theirs['torch']}'s, but torch is {version}: its compiled "
            f"operators do not load ('operator torchvision::nms does not exist')",
            LAYER,
            evidence=[
                f"torchvision: {info.get('evidence')}",
                f"{own['source']}: torch {own['torch']} pairs with torchvision {own['torchvision']}",
            ],
            fix=[
                f"pip install 'torch=={plain}' 'torchvision=={own['torchvision']}.*' --index-url {INDEX}/{tag}  "
                f"(torch {own['torch']}'s torchvision, from torch's own index)",
                f"Or move both to torch {theirs['torch']}: pip install 'torch=={theirs['torch']}.*' "
                f"'torchvision=={theirs['torchvision']}.*' --index-url {INDEX}/{tag}",
            ],
            subject="torch",
            generic_fixes=False,
        )
    ]
