"""The HTML report as `cudoctor report --format html` writes it (issue 40, points 7 and 5): only a finding's
own text takes its severity colour, the cause's general text is marked as such, references are links;
chart values read as the text output's, labels are whole, the red tick is named only when drawn."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, cudoctor

FIXTURES = Path(ROOT) / "tests" / "fixtures"
STATUS_CLASSES = {"ok", "warning", "error", "unknown"}
# A driver too old for the torch build: an error finding whose cause has references.
STATED = {"gpu": "Tesla T4", "driver": "418.87", "framework_version": "torch 2.1.0+cu121"}


def _cpu_result(framework: str, device: str, tflops: dict[str, float]) -> dict[str, Any]:
    """A probe result on a CPU (the figures of `cudoctor probe` with TensorFlow 2.21 on a 2-core VM)."""
    return {
        "framework": framework,
        "status": "ok",
        "info": {"devices": [device]},
        "results": [
            {"device": device, "dtype": d, "n": 1024, "rel_err": 0.0, "correct": True, "tflops": t}
            for d, t in tflops.items()
        ],
    }


CPU_RESULTS = [
    _cpu_result("tensorflow", "/device:CPU:0", {"float64": 0.0804, "float32": 0.1709, "bfloat16": 0.186})
]


def write_inputs(tmp: Path, gpu: bool = True) -> list[str]:
    """Arguments for report/check: the H200 recording's probe results (GPU rows with datasheet peaks and
    an info finding) plus TensorFlow CPU rows, or the CPU rows alone; and stated facts giving an error."""
    if gpu:
        snap = json.loads((FIXTURES / "gpu" / "h200" / "probe.json").read_text())["snapshot"]
    else:
        snap = {"schema": 1, "origin": "cudoctor probe", "created": "2026-11-26T21:00:00", "facts": {}}
        snap["facts"]["probe.results"] = {"status": "known", "source": "cudoctor probe", "value": []}
    snap["facts"]["probe.results"]["value"] += CPU_RESULTS
    (tmp / "snap.json").write_text(json.dumps(snap))
    (tmp / "facts.json").write_text(json.dumps(STATED))
    return ["--snapshot", str(tmp / "snap.json"), "--facts", str(tmp / "facts.json"), "--no-live"]


def html_report(tmp: Path, args: list[str]) -> str:
    page = tmp / "report.html"
    out = cudoctor(["report", *args, "--format", "html", "-o", str(page)])
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stderr
    return page.read_text(encoding="utf-8")


def _part(page: str, start: str, end: str) -> ET.Element:
    """The page between two markers, parsed as XML (the report writes well-formed markup)."""
    i = page.index(start)
    return ET.fromstring(f"<root>{page[i : page.index(end, i)]}</root>")


def _classes(el: ET.Element) -> set[str]:
    return set((el.get("class") or "").split())


def _text(el: ET.Element) -> str:
    """A chart text as shown: its lines (tspans) joined by spaces, without its <title> tooltip."""
    spans = el.findall("tspan")
    return " ".join(s.text or "" for s in spans) if spans else el.text or ""


def charts(page: str) -> dict[str, list[tuple[str, str, ET.Element]]]:
    """Each chart's heading -> its rows as (label, value text, label element)."""
    out = {}
    for svg in _part(page, "<h2>Charts", "<details").iter("svg"):
        texts = svg.findall("text")
        labels = [t for t in texts[1:] if t.get("x") == "0"]
        values = [t for t in texts[1:] if t.get("x") != "0"]
        out[_text(texts[0])] = [(_text(a), _text(b), a) for a, b in zip(labels, values, strict=True)]
    return out


def test_only_a_findings_own_text_takes_the_severity_colour(tmp_path: Path) -> None:
    args = write_inputs(tmp_path)
    page = html_report(tmp_path, args)
    doc = json.loads(cudoctor(["report", *args, "--format", "json"]).stdout)
    boxes = {d.get("id"): d for d in _part(page, "<h2>Findings", "<h2>Charts").iter("div") if d.get("id")}
    assert {f["id"] for f in doc["findings"]} == set(boxes) and any(
        f["severity"] == "error" for f in doc["findings"]
    )
    for f in doc["findings"]:
        box = boxes[f["id"]]
        # a status class on the box ("finding error") coloured all its text, the general paragraph too
        assert not _classes(box) & STATUS_CLASSES, box.get("class")
        [own] = [p for p in box.iter("p") if "own" in _classes(p)]
        assert f["title"] in "".join(own.itertext())
        [about] = [p for p in box.iter("p") if "about" in _classes(p)]
        text = " ".join("".join(about.itertext()).split())
        assert text == " ".join(f"About the cause {f['cause']} in general: {f['why']}".split())
    # the H200's power cap is a note; its cause's general text is about ECC errors and Xids, not a cap
    [cap] = [f for f in doc["findings"] if f["id"].startswith("probe-clocks-limited")]
    assert cap["cause"] == "hardware-fault" and "power limit" in cap["title"] and "ECC" in cap["why"]


def test_the_causes_references_are_links_in_their_finding(tmp_path: Path) -> None:
    args = write_inputs(tmp_path)
    page = html_report(tmp_path, args)
    doc = json.loads(cudoctor(["report", *args, "--format", "json"]).stdout)
    boxes = {d.get("id"): d for d in _part(page, "<h2>Findings", "<h2>Charts").iter("div") if d.get("id")}
    assert all(f["references"] for f in doc["findings"])
    for f in doc["findings"]:
        links = [(a.get("href"), a.text) for a in boxes[f["id"]].iter("a")]
        assert links == [(url, url) for url in f["references"]]


FLOPS = re.compile(r"[\d.]+ [GT]FLOP/s")


def _flops(text: str) -> str:
    """'38.3 GFLOP/s' from '38.3 GFLOP/s (..)': the figure and its unit."""
    m = FLOPS.match(text)
    return m.group(0) if m else f"no figure in {text!r}"


def _text_throughputs(out: str) -> dict[tuple[str, str, str], str]:
    """(framework, dtype, device) -> '38.3 GFLOP/s' from the probe table of `cudoctor check`'s text."""
    found = {}
    for line in out.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 7 and FLOPS.match(cells[6]):
            found[(cells[0], cells[2], cells[1])] = _flops(cells[6])
    return found


def test_chart_values_use_the_text_outputs_units(tmp_path: Path) -> None:
    args = write_inputs(tmp_path)
    text = _text_throughputs(cudoctor(["check", *args, "--no-record"]).stdout)
    rows = charts(html_report(tmp_path, args))["GEMM throughput per dtype (red tick: datasheet peak)"]
    shown = {tuple(label.split(" ", 2)): value for label, value, _ in rows}
    assert len(text) == len(shown) == len(rows) == 21
    assert {k: _flops(v) for k, v in shown.items()} == text
    assert text[("tensorflow", "bfloat16", "/device:CPU:0")] == "186.0 GFLOP/s"


def test_chart_labels_are_whole_and_carry_a_tooltip(tmp_path: Path) -> None:
    rows = charts(html_report(tmp_path, write_inputs(tmp_path)))[
        "GEMM throughput per dtype (red tick: datasheet peak)"
    ]
    labels = [label for label, _, _ in rows]
    assert "tensorflow bfloat16 /device:CPU:0" in labels and "torch bfloat16 cuda:0" in labels
    assert all(el.findtext("title") == label for label, _, el in rows)
    smi = ["--from", str(FIXTURES / "reports" / "nvidia_smi_q_rtx4070_laptop.txt")]
    [(label, value, _)] = charts(html_report(tmp_path, smi))["GPU memory in use (red tick: total)"]
    assert label == "GPU 0 NVIDIA GeForce RTX 4070 Laptop GPU" and value == "0 of 8 GiB"


def test_a_label_too_long_for_its_column_wraps_between_words(tmp_path: Path) -> None:
    args = write_inputs(tmp_path, gpu=False)
    snap = json.loads((tmp_path / "snap.json").read_text())
    device = "/job:localhost/replica:0/task:0/device:CPU:0"
    long = _cpu_result("tensorflow with a long name for its row", device, {"float32": 0.2})
    snap["facts"]["probe.results"]["value"].append(long)
    (tmp_path / "snap.json").write_text(json.dumps(snap))
    [rows] = charts(html_report(tmp_path, args)).values()
    label, _, el = rows[-1]
    lines = [s.text or "" for s in el.findall("tspan")]
    assert label == f"tensorflow with a long name for its row float32 {device}" and len(lines) > 1
    assert [w for line in lines for w in line.split(" ")] == label.split(" ")  # whole words on each line


def test_the_legend_names_the_red_tick_only_when_one_is_drawn(tmp_path: Path) -> None:
    for gpu, heading in (
        (False, "GEMM throughput per dtype"),
        (True, "GEMM throughput per dtype (red tick: datasheet peak)"),
    ):
        page = html_report(tmp_path, write_inputs(tmp_path, gpu=gpu))
        [svg] = list(_part(page, "<h2>Charts", "<details").iter("svg"))
        assert [_text(svg.findall("text")[0])] == [heading]
        assert bool(svg.findall("line")) is gpu
