"""Loading a model and its data: checkpoints that do not fit the model, weights left on the meta device
by an offloaded model, torchvision built for another CUDA than torch, a CPU-only torch asked for a
GPU, and shared tensors that could not be mapped. The installed torch (CPU build) raises most of them
for real here; the other lines are from the threads each signature's source names."""

from __future__ import annotations

import os

import pytest

from tests.conftest import explained, first, fixes, ids, needs_torch, stated, torch_error


@needs_torch
def test_a_head_for_another_number_of_classes_names_both_shapes() -> None:
    out = torch_error(
        "m = torch.nn.Sequential(torch.nn.Linear(512, 100))\n"
        "m.load_state_dict(torch.nn.Sequential(torch.nn.Linear(512, 10)).state_dict())\n"
    )
    exp = explained(out)
    assert ids(exp)[:2] == ["checkpoint-mismatch", "shape-mismatch"]
    why = str(first(exp)["why"])
    assert "0.weight has shape [10, 512] and the model's has [100, 512]" in why
    assert any("ignore_mismatched_sizes=True" in s for s in fixes(exp))


@needs_torch
@pytest.mark.parametrize("wrap", ["torch.nn.DataParallel(m)", "torch.compile(m)"])
def test_a_wrappers_prefix_on_the_keys_is_stripped_not_rebuilt(wrap: str) -> None:
    out = torch_error(
        f"m = torch.nn.Sequential(torch.nn.Linear(4, 4))\nsd = {wrap}.state_dict()\n"
        "torch.nn.Sequential(torch.nn.Linear(4, 4)).load_state_dict(sd)\n"
    )
    assert "Unexpected key(s) in state_dict" in out
    exp = explained(out)
    assert exp.root is not None and exp.root.sig.id == "checkpoint-mismatch/state-dict-keys"
    steps = fixes(exp)
    assert "k.removeprefix('module.')" in steps[0] and "'_orig_mod.' from torch.compile" in steps[0]
    assert not any("num_classes" in s for s in steps)  # the size steps are for the other signature


@needs_torch
@pytest.mark.parametrize(
    "code",
    [
        "torch.nn.Linear(4, 4, device='meta').to('cpu')\n",
        "torch.nn.Linear(4, 4, device='meta')(torch.ones(2, 4))\n",
        "torch.empty(3, device='meta') + torch.ones(3)\n",
    ],
    ids=["moved", "called", "mixed"],
)
def test_weights_left_on_meta_point_at_what_was_offloaded(code: str) -> None:
    exp = explained(torch_error(code))
    assert exp.root is not None and exp.root.sig.id == "gpu-oom/weights-left-on-meta"
    assert ids(exp)[:2] == ["gpu-oom", "device-mismatch"]
    steps = fixes(exp)
    assert steps[0].startswith("See where each part went: print(model.hf_device_map)")
    assert not any("batch size" in s.lower() for s in steps)  # the generic OOM steps do not apply


def test_weights_offloaded_to_disk_mean_the_model_fits_nowhere() -> None:
    """openlm-research/open_llama#37."""
    exp = explained(
        "ValueError: The current `device_map` had weights offloaded to the disk. Please provide an `offload_folder` "
        "for them. Alternatively, make sure you have `safetensors` installed if the model you are using offers "
        "the weights in this format.\n"
    )
    assert ids(exp)[:2] == ["gpu-oom", "host-oom"]
    assert any("offload_folder='offload'" in s for s in fixes(exp))


@pytest.mark.parametrize(
    ("log", "index"),
    [
        (  # cj-mills/pytorch-mask-rcnn-tutorial-code#1: torchvision's current wording (majors only)
            "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA major versions. "
            "PyTorch has CUDA Version=11.8 and torchvision has CUDA Version=12.1. Please reinstall the torchvision "
            "that matches your PyTorch install.\n",
            "cu118",
        ),
        (  # m-bain/whisperX#320: the wording before, which compared minors too
            "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA versions. "
            "PyTorch has CUDA Version=11.7 and torchvision has CUDA Version=11.8\n",
            "cu117",
        ),
        (  # torchaudio's own wording (read in the torchaudio 2.11.0 wheel): major.minor compared
            "RuntimeError: Detected that PyTorch and TorchAudio were compiled with different CUDA versions. PyTorch "
            "has CUDA version 12.8 whereas TorchAudio has CUDA version 12.6. Please install the TorchAudio version "
            "that matches your PyTorch version.\n",
            "cu128",
        ),
    ],
)
def test_torchvision_for_another_cuda_is_reinstalled_from_torchs_index(log: str, index: str) -> None:
    exp = explained(log)
    assert ids(exp)[:2] == ["multiple-toolkits", "binary-incompatible"]
    steps = fixes(exp)
    assert f"--index-url https://download.pytorch.org/whl/{index}" in steps[0] and "torchvision" in steps[0]


@needs_torch
def test_a_cpu_torch_asked_for_a_gpu_is_a_cpu_only_build() -> None:
    """What torch 2.13.0+cpu says to torch.cuda.set_device (levihsu/OOTDiffusion#110 says the same)."""
    exp = explained(torch_error("torch.cuda.set_device(0)\n"))
    assert exp.root is not None and exp.root.sig.id == "cpu-only-build/torch-without-cuda-functions"
    assert first(exp)["id"] == "cpu-only-build" and "_cuda_setDevice" in str(first(exp)["why"])


@needs_torch
def test_torchs_accelerator_api_without_one_is_the_build_or_the_gpu() -> None:
    """What torch 2.13.0+cpu says to torch.accelerator.current_device_index()."""
    exp = explained(torch_error("torch.accelerator.current_device_index()\n"))
    assert exp.root is not None and exp.root.sig.id == "cpu-only-build/torch-accelerator-unavailable"
    assert ids(exp)[:2] == ["cpu-only-build", "no-gpu-visible"]


GIB = 1 << 30


@needs_torch
def test_a_shared_tensor_that_cannot_be_mapped_is_memory_not_dev_shm() -> None:
    """share_memory_() under a ulimit -v just above what the process maps: ENOMEM from mmap."""
    segments = set(os.listdir("/dev/shm"))
    out = torch_error(
        "import resource\n"
        "t = torch.zeros(256 << 20, dtype=torch.uint8)\n"
        "vm = int(open('/proc/self/status').read().split('VmSize:')[1].split()[0]) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + (64 << 20), resource.RLIM_INFINITY))\n"
        "try:\n    t.share_memory_()\n"
        "finally:  # the segment torch created before mmap failed is not unlinked by torch: 256 MiB of RAM per run\n"
        "    import glob, os\n"
        "    for leftover in glob.glob(f'/dev/shm/torch_{os.getpid()}_*'):\n        os.unlink(leftover)\n"
    )
    assert "Cannot allocate memory (12)" in out
    assert not {s for s in os.listdir("/dev/shm") if s.startswith("torch_")} - segments  # none left in RAM
    limited = {"address_space_bytes": GIB, "threads_per_user": None, "cpus": 2, "root": False}
    capped = explained(out, stated({}, host__limits=limited))
    free = explained(out, stated({}, host__limits={**limited, "address_space_bytes": None}))
    assert ids(capped)[:2] == ids(free)[:2] == ["host-oom", "shm-exhausted"]
    assert [f.id for f in capped.causes[0].findings] == ["address-space-limit"]
    assert "vm.max_map_count" in str(first(free)["why"])
    assert any("sysctl -w vm.max_map_count" in s for s in fixes(free))
    assert not any("--shm-size" in s for s in fixes(free))  # /dev/shm's size is not what ran out
