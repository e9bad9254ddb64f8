"""Which Python environment is being checked: cudoctor's own, or another interpreter's (issue 46).

cudoctor may live in its own environment (pipx, uvx, a tools venv) while the environment being
debugged is another: an activated venv or conda env, or the `python3` first on PATH. That
interpreter is asked, in a bounded child process, for its sys.path, version, prefixes and
marker variables; nothing else runs in it (no framework import, only sys/os/platform/sysconfig/
site/json), and the code it runs is valid Python 2.7 and 3.6+. Every fact about packages,
frameworks and libraries is then read from that sys.path, as for cudoctor's own.

Not `-I`: PYTHONPATH and the user site count, as they do for the user's programs. The child
starts from / so a stray json.py in the current directory cannot answer instead;
PYENV_DIR keeps a pyenv shim choosing the version the current directory asks for.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import sys
from collections.abc import Mapping
from typing import Any

from cudoctor import runner
from cudoctor.facts import conda_dirs, markers
from cudoctor.model import Fact, known

# Runs in the target: Python 2.7 and 3.6+ (no f-strings, no annotations), standard modules only.
QUERY = r"""
import json, os, platform, sys
try:
    import site
except Exception:
    site = None
try:
    import sysconfig
except Exception:
    sysconfig = None

def text(s):
    if isinstance(s, bytes) and str is bytes:
        return s.decode("utf-8", "replace")
    return s

def attempt(fn, default):
    try:
        return fn()
    except Exception:
        return default

def uname():
    try:
        u = os.uname()
        return u[0], u[2], u[4]
    except AttributeError:
        return platform.system(), platform.release(), platform.machine()

impl = getattr(sys, "implementation", None)
system, release, machine = uname()
paths = attempt(lambda: sysconfig.get_paths(), {}) if sysconfig else {}
user_site = attempt(lambda: site.getusersitepackages(), None) if site else None
data = {
    "executable": text(sys.executable or ""),
    "version": platform.python_version(),
    "implementation": platform.python_implementation(),
    "prefix": text(sys.prefix),
    "base_prefix": text(getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix))),
    "platform": sys.platform,
    "sys_path": [text(p) for p in sys.path],
    "site_packages": [text(p) for p in (attempt(lambda: site.getsitepackages(), []) if site else [])],
    "purelib": text(paths.get("purelib") or ""),
    "platlib": text(paths.get("platlib") or ""),
    "user_site": text(user_site) if user_site else None,
    "user_site_enabled": bool(site and site.ENABLE_USER_SITE),
    "markers": {
        "os_name": os.name,
        "sys_platform": sys.platform,
        "platform_system": system,
        "platform_machine": machine,
        "platform_release": release,
        "platform_python_implementation": platform.python_implementation(),
        "python_version": "%d.%d" % tuple(sys.version_info[:2]),
        "python_full_version": platform.python_version(),
        "implementation_name": impl.name if impl else platform.python_implementation().lower(),
        "implementation_version": "%d.%d.%d" % tuple(impl.version[:3]) if impl else "0",
    },
}
sys.stdout.write("@@CUDOCTOR@@" + json.dumps(data) + "\n")
"""

SELF = "self"
PROBE_MIN = (3, 7)  # probe/child.py needs `from __future__ import annotations`


CHOSEN_BY = {
    "--python": "given by --python",
    "python=": "given by python=",
    "CUDOCTOR_PYTHON": "given by CUDOCTOR_PYTHON",
    "VIRTUAL_ENV": "the active environment: VIRTUAL_ENV",
    "CONDA_PREFIX": "the active environment: CONDA_PREFIX",
    "PATH": "the python first on PATH",
    SELF: "cudoctor's own environment",
}


def env_key(prefix: str, version: str, executable: str = "") -> str:
    """'/home/u/envs/train python3.9': an environment's prefix (links resolved) and Python major.minor
    (two Pythons may share a prefix, /usr, each with its own site-packages; a conda env whose Python
    went from 3.9 to 3.10 has new site-packages too). The executable stands in for a missing prefix."""
    where = os.path.realpath(prefix) if prefix else (executable or "?")
    return f"{where} python{'.'.join(version.split('.')[:2]) or '?'}"


class TargetError(ValueError):
    """The Python to check cannot be used (the CLI says so in one line, exit status 2)."""


@dataclasses.dataclass(frozen=True)
class Target:
    """The interpreter whose environment the facts describe."""

    executable: str  # what the interpreter calls itself (sys.executable): the one probes run
    version: str
    prefix: str
    base_prefix: str
    platform: str
    sys_path: tuple[str, ...]
    markers: Mapping[str, str]
    chosen_by: str  # --python, CUDOCTOR_PYTHON, VIRTUAL_ENV, CONDA_PREFIX, PATH, self
    is_self: bool
    given: str = ""  # the path as the user (or the variable) named it
    implementation: str = "CPython"
    site_packages: tuple[str, ...] = ()
    user_site: str | None = None
    note: str = ""  # why this one: "VIRTUAL_ENV is cudoctor's own environment", ...

    @property
    def version_info(self) -> tuple[int, ...]:
        parts = []
        for piece in self.version.split(".")[:3]:
            digits = "".join(ch for ch in piece if ch.isdigit())
            parts.append(int(digits or 0))
        return tuple(parts)

    @property
    def key(self) -> str:
        """What identifies this environment in the snapshot store (its last known good)."""
        return env_key(self.prefix, self.version, self.executable)

    def describe(self) -> str:
        """'Python 3.9.18 at /home/u/envs/train (the active environment: VIRTUAL_ENV)'."""
        where = self.prefix or self.executable
        how = (
            "cudoctor's own environment"
            if self.is_self and self.chosen_by == SELF
            else CHOSEN_BY.get(self.chosen_by, self.chosen_by)
        )
        return f"Python {self.version} at {where} ({how})"

    def summary(self) -> dict[str, Any]:
        """Which interpreter facts describe, for a JSON document (explain's facts_used, run's JSON)."""
        return {
            "executable": self.executable,
            "version": self.version,
            "prefix": self.prefix,
            "chosen_by": self.chosen_by,
            "self": self.is_self,
        }

    @property
    def probe_python(self) -> str | None:
        """The interpreter probe children run with (None: this one)."""
        return None if self.is_self else self.executable

    def python_fact(self) -> Fact:
        value = {"version": self.version, "executable": self.executable, "prefix": self.prefix}
        return known("host.python", value, "sys" if self.is_self else f"asked {self.executable}")

    def fact(self) -> Fact:
        value: dict[str, Any] = {
            "self": self.is_self,
            "chosen_by": self.chosen_by,
            "given": self.given or None,
            "executable": self.executable,
            "version": self.version,
            "implementation": self.implementation,
            "prefix": self.prefix,
            "base_prefix": self.base_prefix,
            "platform": self.platform,
            "site_packages": list(self.site_packages),
            "user_site": self.user_site,
            "cudoctor_python": {"executable": sys.executable, "version": platform.python_version()},
        }
        if self.note:
            value["note"] = self.note
        return known("host.target", value, self.chosen_by)


def self_target(chosen_by: str = SELF, note: str = "") -> Target:
    """cudoctor's own interpreter, read in this process (no child)."""
    site_packages: tuple[str, ...] = ()
    user_site = None
    try:
        import site

        site_packages = tuple(site.getsitepackages())
        user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    except (AttributeError, ImportError):
        pass
    return Target(
        executable=sys.executable,
        version=platform.python_version(),
        prefix=sys.prefix,
        base_prefix=sys.base_prefix,
        platform=sys.platform,
        sys_path=tuple(sys.path),
        markers=markers.environment(),
        chosen_by=chosen_by,
        is_self=True,
        given=sys.executable if chosen_by != SELF else "",
        implementation=platform.python_implementation(),
        site_packages=site_packages,
        user_site=user_site,
        note=note,
    )


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _env_python(prefix: str) -> str:
    """The interpreter of an environment directory (venv, conda env, a Python installation)."""
    for rel in ("bin/python", "bin/python3", "python.exe", "Scripts/python.exe"):
        path = os.path.join(prefix, rel)
        if os.path.isfile(path):
            return path
    return ""


def _named(label: str, spec: str) -> str:
    """'--python /x/python', 'python=/x/python' (the API's keyword)."""
    return f"{label}{spec}" if label.endswith("=") else f"{label} {spec}"


def resolve_path(spec: str, env: Mapping[str, str], label: str = "--python") -> str:
    """An interpreter named as a path, an environment directory, or a command on PATH; always an
    absolute path (the child runs from /, where a relative one names nothing), links kept (a venv's
    bin/python is a link, and where it sits decides its sys.prefix)."""
    if not spec.strip():
        raise TargetError(
            f"{label.rstrip('=')} is empty: name an interpreter, an environment directory, or 'self'"
        )
    if "\0" in spec:
        raise TargetError(f"{label} {spec!r} holds a NUL character: not a path")
    if os.sep not in spec and not os.path.exists(spec):
        found = shutil.which(spec, path=env.get("PATH", os.defpath))
        if found is None:
            raise TargetError(f"{_named(label, spec)}: no such file, and no {spec} on PATH")
        return os.path.abspath(found)
    if os.path.isdir(spec):
        python = _env_python(spec)
        if not python:
            raise TargetError(f"{_named(label, spec)} is a directory with no bin/python in it")
        return os.path.abspath(python)
    if not os.path.exists(spec):
        raise TargetError(f"{_named(label, spec)}: no such file")
    if not os.access(spec, os.X_OK):
        raise TargetError(f"{_named(label, spec)} is not executable (not a Python interpreter?)")
    return os.path.abspath(spec)


def ask(python: str, env: Mapping[str, str], timeout: float, chosen_by: str, given: str = "") -> Target:
    """Run QUERY in `python` (bounded) and describe its environment; TargetError when it cannot answer."""
    name = (
        _named(chosen_by, given or python)
        if chosen_by in ("--python", "python=", "CUDOCTOR_PYTHON")
        else f"{chosen_by}'s python {python}"
    )
    child_env = dict(env)
    child_env.setdefault("PYENV_DIR", os.getcwd())
    child_env.pop("PYTHONSTARTUP", None)
    res = runner.run([python, "-c", QUERY], timeout=timeout, env=child_env)
    if res.error.startswith("timed out"):
        raise TargetError(
            f"{name} did not answer within {timeout:g} s (it hangs on start; CUDOCTOR_TIMEOUT sets the limit)"
        )
    if res.error:
        raise TargetError(f"{name} cannot be run ({res.error}); is it a Python interpreter?")
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or [""])[-1][:200]
        raise TargetError(f"{name} failed on start ({res.describe()})" + (f": {last}" if last else ""))
    payload = runner.last_sentinel_line(res.stdout)
    try:
        data = json.loads(payload) if payload is not None else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("sys_path"), list) or not data.get("version"):
        raise TargetError(f"{name} did not answer as a Python interpreter does")
    sys_path = [str(p) for p in data["sys_path"]]
    if sys_path and sys_path[0] == "":  # what `-c` puts first (the current directory): not the program's
        sys_path = sys_path[1:]
    return Target(
        executable=str(data.get("executable") or python),
        version=str(data["version"]),
        prefix=str(data.get("prefix") or ""),
        base_prefix=str(data.get("base_prefix") or ""),
        platform=str(data.get("platform") or ""),
        sys_path=tuple(sys_path),
        markers={str(k): str(v) for k, v in (data.get("markers") or {}).items()},
        chosen_by=chosen_by,
        is_self=False,
        given=given or python,
        implementation=str(data.get("implementation") or ""),
        site_packages=tuple(str(p) for p in data.get("site_packages") or ()),
        user_site=data.get("user_site"),
    )


def _is_own(target: Target) -> bool:
    return bool(target.prefix) and _same_dir(target.prefix, sys.prefix)


def choose(spec: str | None, env: Mapping[str, str], timeout: float, label: str = "--python") -> Target:
    """The environment to check: `spec` (--python, or what `label` names), else CUDOCTOR_PYTHON,
    else the active one.

    The active one is VIRTUAL_ENV's or CONDA_PREFIX's interpreter, else the python3 (or python)
    first on PATH; any of them that is cudoctor's own environment (same sys.prefix) is `self`,
    read in this process, as cudoctor did before it could check another environment."""
    if spec is None and env.get("CUDOCTOR_PYTHON"):
        spec, how = env["CUDOCTOR_PYTHON"], "CUDOCTOR_PYTHON"
    else:
        how = label
    if spec == SELF:
        return self_target()
    if spec is not None:
        python = resolve_path(spec, env, how)
        target = ask(python, env, timeout, how, given=spec)
        return dataclasses.replace(target, note="cudoctor's own environment") if _is_own(target) else target
    return active(env, timeout)


def active(env: Mapping[str, str], timeout: float) -> Target:
    """The environment a person has activated, or cudoctor's own when there is none."""
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(var)
        if not prefix:
            continue
        if _same_dir(prefix, sys.prefix):
            return self_target(var, f"{var} is cudoctor's own environment")
        python = _env_python(prefix)
        if not python:
            continue  # a stale variable (the environment was removed): the next rule decides
        try:
            target = ask(python, env, timeout, var, given=prefix)
        except TargetError as exc:
            raise TargetError(f"{exc} (--python self checks cudoctor's own environment)") from None
        return target if not _is_own(target) else self_target(var, f"{var} is cudoctor's own environment")
    path = env.get("PATH", os.defpath)
    on_path = shutil.which("python3", path=path) or shutil.which("python", path=path)
    if on_path is None:
        return self_target(SELF, "no python3 or python on PATH")
    own_bin = os.path.join(sys.prefix, "bin")
    if _same_dir(on_path, sys.executable) or _same_dir(os.path.dirname(on_path), own_bin):
        return self_target("PATH", f"{on_path} (first on PATH) is cudoctor's own interpreter")
    try:
        target = ask(on_path, env, timeout, "PATH", given=on_path)
    except TargetError as exc:  # a guess that failed: say so and check cudoctor's own environment
        return self_target(SELF, f"{on_path} (first on PATH) could not be asked: {exc}")
    if _is_own(target):
        return self_target("PATH", f"{on_path} (first on PATH) is cudoctor's own environment")
    return target


SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", "site-packages", ".tox", ".mypy_cache"}


def venvs_under(root: str, depth: int = 3, max_dirs: int = 20_000) -> list[str]:
    """Directories holding a pyvenv.cfg under `root` (`depth` levels, hidden ones such as .venv too),
    not looking inside an environment once found; bounded to `max_dirs` directories."""
    found: list[str] = []
    seen = 0
    frontier = [(root, 0)]
    while frontier and seen < max_dirs:
        here, level = frontier.pop(0)
        seen += 1
        if os.path.isfile(os.path.join(here, "pyvenv.cfg")):
            found.append(here)
            continue
        if level >= depth:
            continue
        try:
            names = sorted(os.listdir(here))
        except OSError:
            continue
        for name in names:
            path = os.path.join(here, name)
            if name not in SKIP_DIRS and os.path.isdir(path) and not os.path.islink(path):
                frontier.append((path, level + 1))
    return found


def discover(root: str, env: Mapping[str, str], timeout: float) -> tuple[list[tuple[str, str]], str]:
    """(environment directory, how it was found) for every conda env and every venv under `root`,
    the active ones first; and a note when conda could not be asked."""
    out: dict[str, str] = {}
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if env.get(var) and os.path.isdir(env[var]):
            out.setdefault(os.path.realpath(env[var]), var)
    conda, note = conda_dirs.find(env, timeout)
    for path, how in conda:
        out.setdefault(os.path.realpath(path), how)
    for path in venvs_under(root):
        out.setdefault(os.path.realpath(path), "venv")
    return list(out.items()), note
