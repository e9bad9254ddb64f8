"""Whose facts explain a log: this machine's only when the log comes from it.

A log pasted from an issue or another node names its own GPU, driver, framework versions, Python and
OS (device lines, collect_env, paths like /home/bob/.local/lib/python3.8/site-packages/torch/...).
Where one of those disagrees with this machine, this machine's facts would explain a failure it never
had ("PyTorch 2.13.0+cpu is a CPU-only build" for a log from an RTX 4090 box), so they are left out
and the output says why (issue 40, point 4).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cudoctor import versions
from cudoctor.checks import view
from cudoctor.model import Snapshot

SITE_PACKAGES = re.compile(r"[/\\]python(\d)\.(\d{1,2})[/\\](?:site|dist)-packages[/\\]", re.I)
WINDOWS_PATH = re.compile(r"\b[A-Z]:\\(?:Users|Program Files|ProgramData|Python\d*)\\", re.I)


def _norm_gpu(name: str) -> str:
    return re.sub(r"\b(nvidia|geforce|tesla)\b|[^a-z0-9]", "", name.lower())


def differences(log_facts: Mapping[str, str], text: str, live: Snapshot) -> list[str]:
    """What the log says of its machine that this machine is not (empty: nothing disagrees)."""
    out = []
    gpus = [str(g.get("name", "")) for g in live.value("gpu.devices") or []]
    said = log_facts.get("gpu")
    if said:
        if not gpus:
            out.append(f"the log's GPU is {said}, and this machine shows none")
        elif not any(_norm_gpu(said) in _norm_gpu(g) or _norm_gpu(g) in _norm_gpu(said) for g in gpus):
            out.append(f"the log's GPU is {said}, this machine's {', '.join(gpus)}")
    driver, here = log_facts.get("driver"), live.value("driver.version")
    if driver and here and versions.parse(driver.split()[0]) != versions.parse(str(here)):
        out.append(f"the log's driver is {driver.split()[0]}, this machine's {here}")
    stated = log_facts.get("framework_version")
    if stated:
        installed = {str(info.get("version")) for _, info in view.frameworks(live) if info.get("version")}
        version = re.search(r"\d+\.\d+(?:\.\d+)?(?:\+\w+)?", stated)
        if installed and version and version.group(0) not in installed:
            out.append(f"the log's framework is {stated}, this machine has {', '.join(sorted(installed))}")
    m = SITE_PACKAGES.search(text)
    py = (live.value("host.python") or {}).get("version")
    if m and py and versions.major_minor(py) != (int(m.group(1)), int(m.group(2))):
        out.append(f"the log's Python is {m.group(1)}.{m.group(2)} (its paths), this machine's {py}")
    system = str((live.value("host.os") or {}).get("system") or "")
    if WINDOWS_PATH.search(text) and system and system != "Windows":
        out.append(f"the log's paths are Windows paths, this machine runs {system}")
    return out
