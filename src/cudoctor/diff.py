"""What changed between two snapshots, layer by layer, and which findings appeared or went away."""

from __future__ import annotations

import dataclasses
from typing import Any

from cudoctor.checks import run_checks
from cudoctor.model import FRAMEWORKS, Snapshot


@dataclasses.dataclass(frozen=True)
class Change:
    layer: str
    key: str
    before: str | None
    after: str | None

    @property
    def kind(self) -> str:
        return "added" if self.before is None else "removed" if self.after is None else "changed"

    def to_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "key": self.key,
            "before": self.before,
            "after": self.after,
            "kind": self.kind,
        }


@dataclasses.dataclass
class Diff:
    changes: list[Change]
    appeared: list[dict[str, str]]
    gone: list[dict[str, str]]

    def to_json(self) -> dict[str, Any]:
        return {
            "changes": [c.to_json() for c in self.changes],
            "findings_appeared": self.appeared,
            "findings_gone": self.gone,
        }


def _s(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def flatten(snap: Snapshot) -> dict[str, dict[str, str | None]]:
    """layer -> key -> printable value: the parts of a snapshot worth comparing."""
    layers: dict[str, dict[str, str | None]] = {}
    gpu = layers.setdefault("GPU & driver", {})
    gpu["driver"] = _s(snap.value("driver.version"))
    gpu["driver CUDA"] = _s(snap.value("driver.cuda_version"))
    for g in snap.value("gpu.devices") or []:
        gpu[f"GPU {g.get('index')}"] = (
            f"{g.get('name')} (cc {g.get('cc')}, {g.get('memory_total_mib', '?')} MiB)"
        )
    for soname, res in (snap.value("driver.libraries") or {}).items():
        gpu[soname] = _s((res or {}).get("real")) or "(not found)"
    tk = layers.setdefault("CUDA toolkits", {})
    for t in snap.value("cuda.toolkits") or []:
        tk[str(t.get("root"))] = _s(t.get("version"))
    for tool, info in (snap.value("cuda.path_tools") or {}).items():
        tk[f"{tool} on PATH"] = _s((info or {}).get("resolved"))
    fw = layers.setdefault("Frameworks", {})
    libs = layers.setdefault("Library resolution", {})
    for name in FRAMEWORKS:
        info = snap.value(f"framework.{name}")
        if not isinstance(info, dict):
            continue
        for field in ("version", "build", "cuda", "cudnn", "archs"):
            fw[f"{name} {field}"] = _s(info.get(field))
        for soname, res in (info.get("libs") or {}).items():
            libs[f"{name}: {soname}"] = _s(res.get("path")) or "(not found)"
    layers["Packages"] = {k: _s(v) for k, v in (snap.value("python.packages") or {}).items()}
    layers["Environment"] = {k: _s(v) for k, v in (snap.value("env") or {}).items()}
    host = layers.setdefault("Host", {})
    host["os"] = _s((snap.value("host.os") or {}).get("name"))
    host["python"] = _s((snap.value("host.python") or {}).get("version"))
    host["container"] = _s(snap.value("host.container"))
    return layers


def diff(before: Snapshot, after: Snapshot) -> Diff:
    a, b = flatten(before), flatten(after)
    changes = []
    for layer in a.keys() | b.keys():
        left, right = a.get(layer, {}), b.get(layer, {})
        for key in sorted(left.keys() | right.keys()):
            if left.get(key) != right.get(key):
                changes.append(Change(layer, key, left.get(key), right.get(key)))
    order = list(flatten(Snapshot()).keys())
    changes.sort(key=lambda c: (order.index(c.layer) if c.layer in order else 99, c.key))
    fa, fb = _findings(before), _findings(after)
    return Diff(changes, [fb[k] for k in fb.keys() - fa.keys()], [fa[k] for k in fa.keys() - fb.keys()])


def _findings(snap: Snapshot) -> dict[tuple[str, str], dict[str, str]]:
    found = [f for r in run_checks(snap) for f in r.findings]
    return {(f.id, f.title): {"id": f.id, "severity": f.severity.value, "title": f.title} for f in found}
