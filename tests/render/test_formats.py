"""The one output interface (issue 42, render/formats.py): every kind of document renders in every format
it declares, from real documents built from the fixtures; a format it does not declare is a ValueError;
argparse's --format choices are the table's; renderers are imported only when used."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudoctor import allenvs, causes_command, cli, render, store
from cudoctor.diff import diff
from cudoctor.explainer.command import explain_file, explain_stated
from cudoctor.fixes import checked
from cudoctor.fleet import analysis
from cudoctor.importers import load_report
from cudoctor.model import Report
from cudoctor.render.formats import KINDS
from tests.conftest import ROOT

GPU = Path(ROOT) / "tests" / "fixtures" / "gpu" / "h100"
CHECK, HIDDEN, PROBE = GPU / "check.json", GPU / "check_hidden_gpu.json", GPU / "probe.json"
OOM_LOG = GPU / "broken" / "oom_accumulate.txt"
STATED = {"gpu": "Tesla T4", "driver": "418.87", "framework_version": "torch 2.1.0+cu121"}


def _report(path: Path) -> Report:
    snap = load_report(str(path))
    return Report(snap, checked(snap))


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, dict[str, Any]]]:
    """kind -> (a real document of that kind, the options its command passes)."""
    probed = _report(PROBE)
    shared = _report(CHECK)
    shared.extra["log"] = {"file": OOM_LOG.name, **explain_file(str(OOM_LOG), shared.snapshot)}
    explanation = explain_stated(OOM_LOG.read_text(encoding="utf-8"), STATED)
    db = str(tmp_path_factory.mktemp("store") / "snapshots.db")
    store.save(db, probed.snapshot, label="probed", good=True, findings=len(probed.findings))
    entry, _ = store.load(db, "probed")
    envs = [
        {"env": "/envs/a", "found_by": "venv", **allenvs.summary("3.11.7", probed)},
        {"env": "/envs/b", "found_by": "venv", **allenvs.summary("3.11.7", _report(HIDDEN))},
    ]
    nodes = analysis.load_reports([str(CHECK), str(HIDDEN), str(PROBE)])
    return {
        "check": (probed, {"verbose": True}),
        "explain": (explanation, {"verbose": False}),
        "report": (shared, {}),
        "probe": (probed, {}),
        "snapshot-list": (store.entries(db), {}),
        "snapshot-show": (probed, {"entry": entry}),
        "diff": (
            {
                "a": "before",
                "b": "after",
                **diff(load_report(str(CHECK)), load_report(str(HIDDEN))).to_json(),
            },
            {},
        ),
        "fleet": (analysis.analyse(nodes), {}),
        "all-envs": ({"schema": 1, "root": "/envs", "note": None, "envs": envs, "odd_ones": []}, {}),
        "causes": (causes_command.listing(), {"describe": causes_command.describe}),
        "cause": (causes_command.describe("gpu-oom"), {}),
    }


def test_every_kind_has_a_document_here(documents: dict[str, Any]) -> None:
    assert set(documents) == set(KINDS)


@pytest.mark.parametrize(
    ("kind", "fmt"), [(kind, fmt) for kind, spec in KINDS.items() for fmt in spec.formats]
)
def test_every_registered_format_renders_a_real_document(
    kind: str, fmt: str, documents: dict[str, tuple[Any, dict[str, Any]]]
) -> None:
    document, options = documents[kind]
    out = render.emit(kind, fmt, document, **options)
    assert isinstance(out, str) and out.endswith("\n") and len(out.strip()) > 20
    if fmt == "json":
        json.loads(out)
    elif fmt == "html":
        assert out.startswith("<!DOCTYPE html>")
    elif fmt == "markdown":
        assert out.startswith("#")


def test_what_a_document_holds_reaches_each_format(documents: dict[str, tuple[Any, dict[str, Any]]]) -> None:
    report, _ = documents["report"]
    assert "### The log (oom_accumulate.txt)" in render.emit("report", "markdown", report)
    assert json.loads(render.emit("report", "json", report))["log"]["causes"][0]["id"] == "gpu-oom"
    doc, _ = documents["explain"]
    assert render.emit("explain", "text", doc).startswith("Root error (line ")
    assert json.loads(render.emit("explain", "json", doc)) == json.loads(json.dumps(doc, default=str))
    probed, options = documents["snapshot-show"]
    assert render.emit("snapshot-show", "text", probed, **options).startswith(
        f"snapshot {options['entry'].id} (probed)"
    )
    probes = render.emit("probe", "text", probed)
    assert "] Probes" in probes and "GPU & driver" not in probes


def test_an_undeclared_kind_format_or_option_is_a_value_error(documents: dict[str, Any]) -> None:
    report, _ = documents["check"]
    with pytest.raises(ValueError, match="check has no 'html' output"):
        render.emit("check", "html", report)
    with pytest.raises(ValueError, match="no renderers for a document of kind 'nonesuch'"):
        render.emit("nonesuch", "text", report)
    with pytest.raises(ValueError, match="take no option colour"):
        render.emit("check", "text", report, colour=True)
    with pytest.raises(ValueError):
        render.choices("nonesuch")
    with pytest.raises(ValueError):
        render.redacts("report", "text")


def test_every_renderer_named_is_importable() -> None:
    from cudoctor.render.formats import renderer

    for kind, spec in KINDS.items():
        assert spec.default in spec.formats, kind
        assert spec.shared <= set(spec.formats), kind
        for fmt in spec.formats:
            assert callable(renderer(kind, fmt)), (kind, fmt)


def test_only_outputs_made_to_be_shared_are_redacted() -> None:
    assert render.redacts("check", "markdown") and not render.redacts("check", "json")
    assert all(render.redacts("report", fmt) for fmt in render.choices("report"))
    assert not any(render.redacts("explain", fmt) for fmt in render.choices("explain"))


def _format_choices(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> dict[tuple[str, ...], Any]:
    """Every (sub)command's --format action, by its command path."""
    found = {}
    for action in parser._actions:
        if "--format" in action.option_strings:
            found[path] = action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_format_choices(sub, (*path, name)))
    return found


def test_argparse_format_choices_are_the_registrys() -> None:
    kinds = {
        ("check",): "check",
        ("explain",): "explain",
        ("report",): "report",
        ("probe",): "probe",
        ("snapshot", "list"): "snapshot-list",
        ("snapshot", "show"): "snapshot-show",
        ("diff",): "diff",
        ("fleet",): "fleet",
        ("causes",): "causes",
    }
    actions = _format_choices(cli.build_parser())
    assert set(actions) == set(kinds)
    for path, kind in kinds.items():
        assert tuple(actions[path].choices) == render.choices(kind), path
        assert actions[path].default == render.default(kind), path
    assert render.choices("cause") == render.choices("causes")  # one --format for both
    assert set(render.choices("all-envs")) <= set(render.choices("check"))  # check --all-envs


def _modules_after(argv: list[str]) -> set[str]:
    """The cudoctor.render and cudoctor.explainer modules a fresh interpreter has loaded after `cudoctor ARGV`."""
    code = (
        "import contextlib, io, sys\n"
        "from cudoctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main({argv!r})\n"
        "print(' '.join(m for m in sys.modules if m.startswith(('cudoctor.render', 'cudoctor.explainer'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_check_imports_neither_explains_nor_htmls_renderers(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(STATED))
    for fmt in render.choices("check"):
        loaded = _modules_after(["check", "--no-live", "--facts", str(facts), "--no-record", "--format", fmt])
        assert "cudoctor.render.formats" in loaded, fmt
        assert not {"cudoctor.render.explanation", "cudoctor.render.html"} & loaded, (fmt, loaded)
        assert not any(m.startswith("cudoctor.explainer") for m in loaded), (fmt, loaded)
    loaded = _modules_after(["check", "--no-live", "--facts", str(facts), "--no-record"])
    assert "cudoctor.render.text" in loaded  # the check above sees what a run imports
    loaded = _modules_after(["explain", str(OOM_LOG), "--no-live"])
    assert "cudoctor.render.explanation" in loaded and "cudoctor.render.html" not in loaded
