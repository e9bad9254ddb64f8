"""Where conda (and micromamba) keep their environments, read without running conda (issue 46).

`cudoctor check --all-envs` asks `conda env list --json` when conda can be run; this finds the same
environments when it cannot (conda not on PATH in this shell, a cluster's module not loaded): the
`envs_dirs` conda reads (CONDA_ENVS_PATH / CONDA_ENVS_DIRS, `envs_dirs:` in every .condarc it reads,
then ROOT/envs and ~/.conda/envs), the roots of conda installations (CONDA_EXE, MAMBA_EXE,
MAMBA_ROOT_PREFIX, _CONDA_ROOT, the base of CONDA_PREFIX, the usual installer folders), and
conda's ~/.conda/environments.txt. A directory is a conda environment when it holds `conda-meta/`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping

from cudoctor import runner

INSTALLERS = ("miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba", "miniconda", "anaconda")
ITEM = re.compile(r"^\s*-\s*(.+?)\s*$")
FLOW = re.compile(r"^envs_dirs\s*:\s*\[(.*)\]\s*$")


def is_env(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "conda-meta"))


def _expand(path: str, env: Mapping[str, str]) -> str:
    home = env.get("HOME") or os.path.expanduser("~")
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), path)


def condarc_envs_dirs(text: str) -> list[str]:
    """The `envs_dirs` list of a .condarc (block or flow style; the YAML conda's own files use)."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        bare = line.split(" #")[0].rstrip()
        if not bare.strip() or bare.lstrip().startswith("#"):
            continue
        flow = FLOW.match(bare)
        if flow:
            out += [p.strip().strip("'\"") for p in flow.group(1).split(",") if p.strip()]
            inside = False
            continue
        if re.match(r"^envs_dirs\s*:\s*$", bare):
            inside = True
            continue
        item = ITEM.match(bare)
        if inside and item:
            out.append(item.group(1).strip("'\""))
        elif not bare.startswith((" ", "\t")):
            inside = False
    return out


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1 << 20)
    except OSError:
        return ""


def roots(env: Mapping[str, str]) -> list[str]:
    """Conda installations this shell knows of, or that sit where installers put them."""
    home = env.get("HOME") or os.path.expanduser("~")
    found: list[str] = []
    for var in ("CONDA_EXE", "MAMBA_EXE"):
        exe = env.get(var)
        if exe:  # ROOT/bin/conda or ROOT/condabin/conda
            found.append(os.path.dirname(os.path.dirname(exe)))
    found += [env[v] for v in ("_CONDA_ROOT", "MAMBA_ROOT_PREFIX") if env.get(v)]
    prefix = env.get("CONDA_PREFIX", "")
    if os.path.basename(os.path.dirname(prefix)) == "envs":
        found.append(os.path.dirname(os.path.dirname(prefix)))
    elif prefix:
        found.append(prefix)
    found += [os.path.join(home, name) for name in INSTALLERS]
    found += [os.path.join(home, ".local", "share", "mamba"), "/opt/conda"]
    return [r for r in dict.fromkeys(found) if os.path.isdir(r)]


def envs_dirs(env: Mapping[str, str], installs: Iterable[str]) -> list[str]:
    """Every folder conda keeps environments in, as conda orders them."""
    home = env.get("HOME") or os.path.expanduser("~")
    installs = list(installs)
    dirs: list[str] = []
    for var in ("CONDA_ENVS_PATH", "CONDA_ENVS_DIRS"):
        dirs += [p for p in env.get(var, "").split(os.pathsep) if p]
    rcs = ["/etc/conda/.condarc", "/etc/conda/condarc"]
    rcs += [os.path.join(r, ".condarc") for r in installs]
    rcs += [os.path.join(home, ".config", "conda", ".condarc"), os.path.join(home, ".conda", ".condarc")]
    rcs += [os.path.join(home, ".condarc")]
    if env.get("CONDARC"):
        rcs.append(env["CONDARC"])
    for rc in dict.fromkeys(rcs):
        dirs += condarc_envs_dirs(_read(rc))
    dirs += [os.path.join(r, "envs") for r in installs] + [os.path.join(home, ".conda", "envs")]
    return [d for d in dict.fromkeys(_expand(d, env) for d in dirs) if os.path.isdir(d)]


def listed(env: Mapping[str, str], timeout: float) -> tuple[list[str], str]:
    """`conda env list --json` (or micromamba's), when conda or micromamba can be run; a note when it failed."""
    path = env.get("PATH", os.defpath)
    tool = (
        env.get("CONDA_EXE")
        or shutil.which("conda", path=path)
        or env.get("MAMBA_EXE")
        or shutil.which("micromamba", path=path)
    )
    if not tool:
        return [], ""
    res = runner.run([tool, "env", "list", "--json"], timeout=timeout, env=env)
    if not res.ok:
        return [], f"{os.path.basename(tool)} env list: {res.describe()}"
    try:
        envs = json.loads(res.stdout).get("envs", [])
    except (ValueError, AttributeError):
        return [], f"{os.path.basename(tool)} env list --json did not print JSON"
    return [str(p) for p in envs if isinstance(p, str)], ""


def find(env: Mapping[str, str], timeout: float) -> tuple[list[tuple[str, str]], str]:
    """(environment, how it was found) for every conda env: listed by conda, then found in the roots,
    envs_dirs and environments.txt; a note when conda could not be asked."""
    out: dict[str, str] = {}
    by_conda, note = listed(env, timeout)
    for path in by_conda:
        out.setdefault(path, "conda")
    installs = roots(env)
    for root in installs:
        if is_env(root):
            out.setdefault(root, "conda (base)")
    for folder in envs_dirs(env, installs):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if is_env(path):
                out.setdefault(path, "conda (envs_dirs)")
    home = env.get("HOME") or os.path.expanduser("~")
    for line in _read(os.path.join(home, ".conda", "environments.txt")).splitlines():
        if line.strip():
            out.setdefault(line.strip(), "conda (environments.txt)")
    return [(p, how) for p, how in out.items() if os.path.isdir(p)], note
