"""vLLM's memory budget: gpu_memory_utilization is a share of the whole GPU for weights, activations
and the KV cache together, so its errors need their own steps (raise the share, cap the context),
not the generic out-of-memory ones (smaller batch, empty_cache). Lines are from the threads each
signature's source names."""

from __future__ import annotations

import pytest

from tests.conftest import explained, first, fixes

NO_BLOCKS = (
    "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
    "when initializing the engine.\n"
)


def test_no_room_for_cache_blocks_says_a_lower_share_makes_it_worse() -> None:
    """vllm-project/vllm#10439: the reporter lowered the share to 0.03-0.4 and it kept failing."""
    exp = explained(NO_BLOCKS)
    assert exp.root is not None and exp.root.sig.id == "gpu-oom/vllm-no-room-for-kv-cache"
    cause = first(exp)
    assert cause["id"] == "gpu-oom" and "makes this worse, not better" in str(cause["why"])
    steps = fixes(exp)
    assert steps[0].startswith("If nothing else uses the GPU") and "--gpu-memory-utilization 0.95" in steps[0]
    assert any("--tensor-parallel-size" in s for s in steps) and any("--enforce-eager" in s for s in steps)
    assert not any("batch size" in s.lower() for s in steps)  # the generic OOM steps do not apply


@pytest.mark.parametrize(
    ("log", "want", "fit"),
    [
        (  # netease-youdao/QAnything#289 (V0)
            "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be "
            "stored in KV cache (3792). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
            "initializing the engine.\n",
            "4096",
            "3792",
        ),
        (  # V1, with its own estimate of what fits
            "ValueError: To serve at least one request with the models's max seq len (196608), (11.62 GiB KV cache "
            "is needed, which is larger than the available KV cache memory (9.38 GiB). Based on the available "
            "memory, the estimated maximum model length is 158560. Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.\n",
            "196608",
            "158560",
        ),
    ],
)
def test_a_context_longer_than_the_cache_gives_the_max_model_len_that_fits(
    log: str, want: str, fit: str
) -> None:
    exp = explained(log)
    assert exp.root is not None and exp.root.sig.id == "gpu-oom/vllm-context-exceeds-kv-cache"
    cause = first(exp)
    assert f"full context ({want} tokens)" in str(cause["why"]) and f"it holds {fit}" in str(cause["why"])
    assert fixes(exp)[0].startswith(f"Cap the context at what fits: --max-model-len {fit} or less")


def test_a_v1_message_without_the_estimate_still_says_cap_the_context() -> None:
    exp = explained("ValueError: To serve at least one request with the models's max seq len (1280)\n")
    assert exp.root is not None and exp.root.sig.id == "gpu-oom/vllm-context-needs-more-kv-cache"
    assert fixes(exp)[0].startswith("Cap the context: a smaller --max-model-len")
    assert not any("<fit>" in s for s in fixes(exp))


def test_free_memory_below_the_share_at_start_points_at_the_other_processes() -> None:
    """pytorch/pytorch#175666 (from vLLM's CI)."""
    exp = explained(
        "[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940) ValueError: Free memory on device cuda:1 (19.77/22.05 GiB) "
        "on startup is less than desired GPU memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization "
        "or reduce GPU memory used by other processes.\n"
    )
    assert exp.root is not None and exp.root.sig.id == "gpu-oom/vllm-free-memory-below-utilization"
    cause = first(exp)
    assert "only 19.77 of 22.05 GiB was" in str(cause["why"]) and "(19.84 GiB)" in str(cause["why"])
    steps = fixes(exp)
    assert steps[0].startswith("See who holds it: nvidia-smi")
    assert any("below 19.77/22.05 of the total" in s for s in steps)


def test_vllms_memory_profile_lines_are_not_errors() -> None:
    exp = explained(
        "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB "
        "memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90\n"
        "# GPU blocks: 1952, # CPU blocks: 2048\nMaximum concurrency for 20000 tokens per request: 1.56x\n"
    )
    assert exp.root is None and exp.causes == []
