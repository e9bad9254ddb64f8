"""Read the literal build-info modules frameworks ship, with `ast`, never importing them."""

from __future__ import annotations

import ast
import json
import os
import re
from typing import Any


def literal_assignments(path: str) -> dict[str, Any]:
    """Top-level `name = <literal>` assignments of a Python file (torch/version.py style)."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    out: dict[str, Any] = {}
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name) and value is not None:
                try:
                    out[target.id] = ast.literal_eval(value)
                except ValueError:
                    continue
    return out


def tensorflow_build_info(path: str) -> dict[str, Any]:
    """`build_info = collections.OrderedDict([...])` (or a dict literal) -> dict."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), filename=path)
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        if not any(isinstance(t, ast.Name) and t.id == "build_info" for t in node.targets):
            continue
        value = node.value
        if isinstance(value, ast.Call) and value.args:
            value = value.args[0]
        data = ast.literal_eval(value)
        return dict(data)
    raise ValueError(f"{path}: no build_info literal")


def read_json(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data


def cudnn_header_version(include_dir: str) -> str | None:
    """CUDNN_MAJOR.MINOR.PATCHLEVEL from cudnn_version.h (or cudnn.h for cuDNN <= 7)."""
    for name in ("cudnn_version.h", "cudnn.h"):
        path = os.path.join(include_dir, name)
        if not os.path.isfile(path):
            continue
        parts: dict[str, str] = {}
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                bits = line.split()
                if (
                    len(bits) >= 3
                    and bits[0] == "#define"
                    and bits[1] in ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")
                ):
                    parts[bits[1]] = bits[2]
        if "CUDNN_MAJOR" in parts:
            return ".".join(parts.get(k, "0") for k in ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"))
    return None


_NAMED_ARCHES = re.compile(r"named_arches\s*=\s*collections\.OrderedDict\(\s*(\[.*?\])\s*\)", re.S)
_SUPPORTED_ARCHES = re.compile(r"supported_arches\s*=\s*(\[.*?\])", re.S)


def cpp_extension_arches(path: str) -> dict[str, Any] | None:
    """The architectures torch.utils.cpp_extension accepts in TORCH_CUDA_ARCH_LIST, read from the
    installed torch/utils/cpp_extension.py without importing it: {"named": [[name, expansion], ...]
    in the order it replaces them, "supported": ["8.0", "8.6", ...]}; None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        named, supported = _NAMED_ARCHES.search(text), _SUPPORTED_ARCHES.search(text)
        if not named or not supported:
            return None
        pairs = ast.literal_eval(named.group(1))
        arches = ast.literal_eval(supported.group(1))
    except (OSError, ValueError, SyntaxError):
        return None
    if not all(isinstance(p, tuple) and len(p) == 2 for p in pairs) or not all(
        isinstance(a, str) for a in arches
    ):
        return None
    native = bool(re.search(r"_arch_list == [\"']native[\"']", text))  # "native": this machine's GPUs
    return {"named": [list(p) for p in pairs], "supported": arches, "native": native}
