"""Checks of GPU memory and health (checks/memory.py): memory held by other processes, preallocation,
ECC and remapped rows, compute modes on real nvidia-smi reports."""

from __future__ import annotations

from tests.checks.helpers import GPU_BUSY, REPORTS, outcome
from tests.conftest import finding_ids, run_check, stated


def test_gpu_memory_held_and_preallocation() -> None:
    tf = {"version": "2.15.0", "build": "cuda", "cuda": "12.2"}
    snap = stated({}, gpu__devices=[GPU_BUSY], framework__tensorflow=tf, env={})
    assert outcome("gpu-memory-held", snap)[1] == ["gpu-memory-held"]
    assert outcome("preallocation-with-shared-gpu", snap)[1] == ["tensorflow-preallocates"]
    grown = stated(
        {}, gpu__devices=[GPU_BUSY], framework__tensorflow=tf, env={"TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    )
    assert outcome("preallocation-with-shared-gpu", grown) == ("ok", [])
    idle = dict(GPU_BUSY, memory_used_mib=10, processes=[])
    assert outcome("gpu-memory-held", stated({}, gpu__devices=[idle])) == ("ok", [])
    assert outcome("gpu-memory-held", stated({}))[0] == "unknown"


def test_gpu_memory_held_never_says_to_stop_a_desktop() -> None:
    """Graphics-only processes (type G: Xorg, a shell) hold no CUDA context to stop: they are named
    but get no kill step; an idle second GPU is offered instead."""
    xorg = {"pid": 1011, "type": "G", "name": "/usr/lib/xorg/Xorg", "used_mib": 60000}
    busy = dict(GPU_BUSY, processes=[xorg])
    idle = dict(GPU_BUSY, index=1, memory_used_mib=4, processes=[])
    [held] = run_check("gpu-memory-held", stated({}, gpu__devices=[busy, idle])).findings
    assert "pid 1011 /usr/lib/xorg/Xorg" in held.title
    assert not any("kill" in step for step in held.fix)
    assert "export CUDA_VISIBLE_DEVICES=1" in held.fix[1]


def test_gpu_memory_held_on_two_gpus_is_one_finding() -> None:
    """Two busy GPUs, one whose holders this container cannot see: one finding whose kill step
    names the biggest process of each GPU (the two biggest when only one GPU is busy), and the
    holders it cannot see are still said."""
    two = dict(GPU_BUSY, processes=[{"pid": 4242, "used_mib": 70000}, {"pid": 4343, "used_mib": 8000}])
    hidden = dict(GPU_BUSY, index=1, memory_used_mib=50000, processes=[])
    [held] = run_check("gpu-memory-held", stated({}, gpu__devices=[two, hidden])).findings
    assert held.title.startswith(
        "GPUs 0, 1 (NVIDIA A100) have 50000 to 79000 of 81920 MiB in use by 2 processes"
    )
    assert held.fix == ("If pid 4242 is left over from an earlier run, stop it: kill 4242",)
    [alone] = run_check("gpu-memory-held", stated({}, gpu__devices=[two])).findings
    assert alone.fix == ("If pids 4242, 4343 are left over from an earlier run, stop them: kill 4242 4343",)
    [unseen] = run_check("gpu-memory-held", stated({}, gpu__devices=[hidden])).findings
    assert unseen.title.endswith("in use by processes this container cannot see")


def test_gpu_memory_errors() -> None:
    bad = dict(GPU_BUSY, ecc_uncorrected_volatile=3, remapped_rows=[0, 2, 0, 1])
    assert outcome("gpu-memory-errors", stated({}, gpu__devices=[bad]))[1] == ["gpu-memory-errors"]
    good = dict(GPU_BUSY, ecc_uncorrected_volatile=0, remapped_rows=[0, 0, 0, 0])
    assert outcome("gpu-memory-errors", stated({}, gpu__devices=[good])) == ("ok", [])
    assert outcome("gpu-memory-errors", stated({}))[0] == "unknown"


def test_gpu_compute_mode_on_real_nvidia_smi_reports() -> None:
    from cudoctor.importers import load_report

    # A T4 in Exclusive_Process whose one process is the MPS server: the intended setup, silent.
    t4 = load_report(str(REPORTS / "nvidia_smi_q_t4_exclusive_mps.txt"))
    assert outcome("gpu-compute-mode", t4) == ("ok", [])
    # Default mode with three graphics processes (nvidia-smi -q -x): silent.
    rtx = load_report(str(REPORTS / "nvidia_smi_q_x_rtx3080ti.xml"))
    assert outcome("gpu-compute-mode", rtx) == ("ok", [])
    # The same T4 with a training process in place of the MPS server: nobody else gets a context.
    gpu = dict(t4.value("gpu.devices")[0], processes=[{"pid": 4242, "name": "python", "type": "C"}])
    r = run_check("gpu-compute-mode", stated({}, gpu__devices=[gpu]))
    assert finding_ids(r) == ["gpu-compute-mode"] and r.findings[0].severity.value == "warning"
    assert "busy or unavailable" in r.findings[0].title and "pid 4242 (python)" in r.findings[0].title
    assert r.findings[0].fix[0].startswith("sudo nvidia-smi -i 0 -c DEFAULT")


def test_gpu_compute_mode_prohibited_and_missing_facts() -> None:
    prohibited = dict(GPU_BUSY, compute_mode="Prohibited", processes=[])
    r = run_check("gpu-compute-mode", stated({}, gpu__devices=[prohibited]))
    assert finding_ids(r) == ["gpu-compute-mode"] and r.findings[0].severity.value == "error"
    assert r.findings[0].cause == "no-gpu-visible"
    idle_exclusive = dict(GPU_BUSY, compute_mode="Exclusive_Process", processes=[])
    assert outcome("gpu-compute-mode", stated({}, gpu__devices=[idle_exclusive])) == ("ok", [])
    # A snapshot recorded before compute mode was collected: unknown, not a silent pass.
    assert outcome("gpu-compute-mode", stated({}, gpu__devices=[GPU_BUSY]))[0] == "unknown"
    assert outcome("gpu-compute-mode", stated({}))[0] == "unknown"


def test_preallocation_ignores_a_desktop_s_graphics_processes() -> None:
    """The real RTX 3080 Ti report has three type-G processes (Xorg, a shell): no CUDA context,
    so TensorFlow preallocating is no conflict; a compute process on the same GPU is."""
    from cudoctor.importers import load_report

    tf = {"version": "2.15.0", "build": "cuda", "cuda": "12.2"}
    rtx = load_report(str(REPORTS / "nvidia_smi_q_x_rtx3080ti.xml")).value("gpu.devices")
    assert len(rtx[0]["processes"]) == 3 and {p["type"] for p in rtx[0]["processes"]} == {"G"}
    desktop = stated({}, gpu__devices=rtx, framework__tensorflow=tf, env={})
    assert outcome("preallocation-with-shared-gpu", desktop) == ("ok", [])
    job = dict(rtx[0], processes=[*rtx[0]["processes"], {"pid": 4242, "name": "python", "type": "C"}])
    shared = stated({}, gpu__devices=[job], framework__tensorflow=tf, env={})
    r = run_check("preallocation-with-shared-gpu", shared)
    assert finding_ids(r) == ["tensorflow-preallocates"]
    assert r.findings[0].evidence == ("gpu 0: 1 process(es)",)
