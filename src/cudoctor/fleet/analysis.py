"""Many nodes' snapshots -> groups by fingerprint, findings per group, and the odd ones out.

Pure functions over reports (dicts), shared by `fleet --ray` and `fleet aggregate`.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
from collections.abc import Iterable
from typing import Any

from cudoctor import textfiles
from cudoctor.inputs import InputError
from cudoctor.model import FRAMEWORKS, Snapshot, check_schema

FINGERPRINT_ENV = (
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "XLA_FLAGS",
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    "NCCL_IB_DISABLE",
    "NCCL_P2P_DISABLE",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "CUBLAS_WORKSPACE_CONFIG",
    "TF_DETERMINISTIC_OPS",
)


@dataclasses.dataclass
class NodeReport:
    node: str
    status: str  # ok | failed | timeout
    snapshot: dict[str, Any] | None = None
    error: str = ""
    node_id: str = ""
    fingerprint: dict[str, str] | None = None  # set when the snapshot was dropped to save memory


@dataclasses.dataclass
class Group:
    fingerprint: dict[str, str]
    nodes: list[str]
    findings: list[dict[str, Any]]


@dataclasses.dataclass
class FleetResult:
    groups: list[Group]
    outliers: list[dict[str, Any]]
    failed: list[NodeReport]

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": sum(len(g.nodes) for g in self.groups) + len(self.failed),
            "groups": [dataclasses.asdict(g) for g in self.groups],
            "outliers": self.outliers,
            "failed": [{"node": f.node, "status": f.status, "error": f.error} for f in self.failed],
        }


def _value(facts: dict[str, Any], key: str, kind: type | tuple[type, ...] = object) -> Any:
    """A known fact's value when it has the type cudoctor writes (a report from elsewhere may not)."""
    fact = facts.get(key)
    if not isinstance(fact, dict) or fact.get("status", "known") != "known":
        return None
    value = fact.get("value")
    return value if isinstance(value, kind) else None


def _records(facts: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [r for r in _value(facts, key, list) or [] if isinstance(r, dict)]


def fingerprint(snapshot: dict[str, Any]) -> dict[str, str]:
    """The facts that should be identical across a homogeneous fleet, as printable strings."""
    facts = snapshot.get("facts", {})
    gpus = _records(facts, "gpu.devices")
    names = collections.Counter(str(g.get("name")) for g in gpus)
    fp = {
        "GPUs": ", ".join(f"{n}x {name}" for name, n in sorted(names.items())) or "none",
        "driver": str(_value(facts, "driver.version", (str, int, float)) or "none"),
        "driver CUDA": str(_value(facts, "driver.cuda_version", (str, int, float)) or "none"),
        "toolkits": " ".join(sorted(str(t.get("version")) for t in _records(facts, "cuda.toolkits")))
        or "none",
        "python": str((_value(facts, "host.python", dict) or {}).get("version", "?")),
    }
    target = _value(facts, "host.target", dict)
    if target and target.get("prefix"):  # which environment the node checked (issue 46)
        fp["python env"] = str(target["prefix"])
    for name in FRAMEWORKS:
        info = _value(facts, f"framework.{name}")
        if isinstance(info, dict):
            extra = ", ".join(f"{k} {info[k]}" for k in ("cuda", "cudnn") if info.get(k))
            fp[name] = f"{info.get('version')} ({info.get('build')}{', ' + extra if extra else ''})"
    env = {k: str(v) for k, v in (_value(facts, "env", dict) or {}).items()}
    for var in FINGERPRINT_ENV:
        if var in env:
            fp[f"${var}"] = env[var]
    fp.update(_interfaces_selected(env, _value(facts, "host.net_interfaces")))
    return fp


def _interfaces_selected(env: dict[str, str], ifaces: Any) -> dict[str, str]:
    """Which of the node's interfaces NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME select: a node where
    the same setting selects another interface, or none, stands out."""
    from cudoctor.checks import interfaces

    if not isinstance(ifaces, list):
        return {}
    return {
        f"interfaces ${var} selects": ", ".join(interfaces.selected(var, env[var], ifaces)) or "none"
        for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")
        if env.get(var)
    }


def _findings(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    from cudoctor.checks import run_checks

    snap = Snapshot.from_json(snapshot)
    return [
        {"id": f.id, "severity": f.severity.value, "title": f.title}
        for r in run_checks(snap)
        for f in r.findings
    ]


def analyse(reports: Iterable[NodeReport]) -> FleetResult:
    by_fp: dict[str, list[tuple[NodeReport, dict[str, str]]]] = {}
    failed = []
    for rep in reports:
        if rep.status != "ok" or (rep.snapshot is None and rep.fingerprint is None):
            failed.append(rep)
            continue
        fp = rep.fingerprint or fingerprint(rep.snapshot or {})
        by_fp.setdefault(json.dumps(fp, sort_keys=True), []).append((rep, fp))
    ordered = sorted(by_fp.values(), key=lambda members: (-len(members), members[0][0].node))
    groups = []
    for members in ordered:
        sample = next(m[0].snapshot for m in members if m[0].snapshot is not None)
        groups.append(Group(members[0][1], sorted(m[0].node for m in members), _findings(sample)))
    return FleetResult(groups, _outliers(groups), sorted(failed, key=lambda r: r.node))


def _outliers(groups: list[Group]) -> list[dict[str, Any]]:
    """Every node outside the largest group, with each fact where it differs from the majority."""
    if len(groups) < 2:
        return []
    majority = groups[0]
    out = []
    for group in groups[1:]:
        diffs = []
        for key in sorted(set(group.fingerprint) | set(majority.fingerprint)):
            mine, theirs = group.fingerprint.get(key, "(not set)"), majority.fingerprint.get(key, "(not set)")
            if mine != theirs:
                diffs.append({"fact": key, "value": mine, "majority": theirs})
        for node in group.nodes:
            text = "; ".join(
                f"{d['fact']} {d['value']} where {len(majority.nodes)} node(s) have {d['majority']}"
                for d in diffs
            )
            out.append({"node": node, "differences": diffs, "text": f"{node}: {text}"})
    return out


def load_reports(paths: Iterable[str]) -> list[NodeReport]:
    """cudoctor JSON reports from files and directories (*.json).

    A node is named by the host name its report records, or by its file name when several
    reports carry the same host name. Only one snapshot per configuration is kept in memory.
    """
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
        elif os.path.isfile(p):
            files.append(p)
        else:
            raise InputError(f"{p} does not exist")
    if not files:
        raise InputError("no *.json reports found")
    reports = []
    kept: set[str] = set()  # fingerprints whose snapshot is kept: one per configuration
    for f in files:
        name = os.path.splitext(os.path.basename(f))[0]
        try:
            with open(f, "rb") as fh:
                data = textfiles.load_json(textfiles.decode(fh.read(), errors="strict"))
            snap = data.get("snapshot", data) if isinstance(data, dict) else None
            if not isinstance(snap, dict) or not isinstance(snap.get("facts"), dict):
                raise ValueError("not a cudoctor report")
            if snap is not data:
                check_schema(data.get("schema"), "report")
            read = Snapshot.from_json(snap)  # facts of the wrong shape are left out here
            if not read.facts:
                raise ValueError("no facts in it")
            snap = read.to_json()
            host = _value(snap["facts"], "host.name", str)
            fp = fingerprint(snap)
            key = json.dumps(fp, sort_keys=True)
            keep = key not in kept
            kept.add(key)
            reports.append(
                NodeReport(str(host or name), "ok", snap if keep else None, node_id=name, fingerprint=fp)
            )
        except (OSError, ValueError) as exc:
            reports.append(NodeReport(name, "failed", None, f"{f}: unreadable report ({exc})", node_id=name))
    seen = collections.Counter(r.node for r in reports)
    for r in reports:  # several files from one host name (or copies): name them by file instead
        if seen[r.node] > 1:
            r.node = r.node_id
    return reports
