"""ollama as people state it (the check scenarios' threads): its release, the CUDA runner it names, a
build made with the machine's own CUDA."""

from __future__ import annotations

import pytest

from cudoctor.facts import stated_apps


@pytest.mark.parametrize(
    ("text", "system_cuda", "want"),
    [
        ("ollama 0.1.20", None, {"release": "0.1.20"}),
        ("Ollama v0.4.0", None, {"release": "0.4.0"}),
        ("ollama version is 0.11.11", None, {"release": "0.11.11"}),
        ("ollama CUDA 13.0 backend", None, {"runner": "13"}),
        ("ollama ... library=cuda variant=cuda_v12", None, {"runner": "12"}),
        ("ollama-cuda (Arch repo package, uses the system CUDA)", "13.0.1", {"system_cuda": "13.0"}),
        ("ollama (Jan 2024)", None, {}),
    ],
)
def test_ollama_read_as_stated(text: str, system_cuda: str | None, want: dict[str, str]) -> None:
    (fact,) = stated_apps.ollama_facts(text, system_cuda)
    info = fact.value
    assert {k: v for k, v in info.items() if k != "stated"} == want


@pytest.mark.parametrize(
    "text",
    [
        "torch 2.1.0+cu121",  # no ollama
        "llama.cpp b1234 built with CUDA 12 backend",  # another runtime's backend
    ],
)
def test_no_ollama_no_fact(text: str) -> None:
    assert stated_apps.ollama_facts(text, "12.4") == []


def test_the_system_cuda_counts_only_for_a_build_made_with_it() -> None:
    (fact,) = stated_apps.ollama_facts("ollama 0.12.7 (official install script)", "13.0")
    assert "system_cuda" not in fact.value
