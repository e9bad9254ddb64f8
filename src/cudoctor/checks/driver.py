"""Driver ↔ framework and driver ↔ process-visibility contracts."""

from __future__ import annotations

import re
from typing import Any

from cudoctor import knowledge, versions
from cudoctor.checks import FRAMEWORK_FACTS, check, finding, view, visible_devices
from cudoctor.checks.toolchain import older_ptxas_step
from cudoctor.knowledge import jax_builds
from cudoctor.model import Finding, Severity, Snapshot

LAYER = "GPU & driver"


@check("driver-too-old", "driver-too-old", LAYER, requires_any=("driver.version", "driver.cuda_version"))
def driver_too_old(snap: Snapshot) -> list[Finding]:
    """The driver is older than the CUDA a framework build needs (minor-version compatibility aware), or
    than the CUDA a container image requires (as nvidia-container-cli checks it: a CUDA 12 image also starts on the
    470, 535 and 550 branches for any brand but GeForce and TITAN, through its brand clauses)."""
    driver = str(snap.value("driver.version"))
    dv = versions.parse(driver)
    driver_cuda = snap.value("driver.cuda_version")
    out = _image_needs_newer_driver(snap, dv, driver, driver_cuda)
    # native Windows numbers its drivers on its own scale (WSL2 reports the Linux-side version)
    windows = view.platform(snap) == "windows"
    for name, info in view.cuda_frameworks(snap):
        floor = knowledge.driver_floor(str(info["cuda"]), windows)
        strict = jax_builds.strict_driver(info) if name == "jax" else None
        own = knowledge.release_driver_floor(str(info["cuda"]), windows) if strict else None
        if strict and own:  # JAX on a local toolkit: the release's own driver, no minor-version compatibility
            floor = own, f"CUDA {info['cuda']} needs driver >= {own} ({strict})"
        if floor is None:
            continue
        need, rule = floor
        if dv is None:  # only the driver's CUDA is known ('CUDA Version: 12.2', 'found version 11040')
            if not driver_cuda or knowledge.driver_runs(str(driver_cuda), str(info["cuda"])):
                continue
        elif not _driver_below(dv, versions.parse(need)):
            continue
        supported = driver_cuda or knowledge.max_cuda_for_driver(driver, windows)
        runs = f" (supports CUDA {supported})" if supported else ""  # older than every driver floor known
        mm = versions.major_minor(str(info["cuda"])) or (0, 0)
        which = f"Driver {driver}" if dv is not None else "The driver"
        out.append(
            finding(
                "driver-too-old",
                "driver-too-old",
                Severity.ERROR,
                f"{which}{runs} is too old for {view.describe(name, info)}: {rule}",
                LAYER,
                evidence=[
                    f"driver.version = {driver}"
                    if dv is not None
                    else f"driver.cuda_version = {driver_cuda}",
                    f"framework.{name}.cuda = {info['cuda']}",
                ],
                fix=[
                    _downgrade_hint(name, supported or None, mm),
                    f"Or upgrade the NVIDIA driver to {need} or newer",
                ],
                about=[name],
            )
        )
    return out


REFUSED = re.compile(
    r"unsatisfied condition: cuda", re.I
)  # nvidia-container-cli's words when it refuses an image
# a cloud's GPU nodes, whose GPUs are datacenter ones (T4, A10, L4, A100, H100): the images' brand clauses admit them
CLOUD = re.compile(r"\b(?:AKS|EKS|GKE|EC2|SageMaker|Vertex AI|Azure|AWS|GCP|Google Cloud)\b")


def _image_needs_newer_driver(
    snap: Snapshot, dv: versions.Version | None, driver: str, driver_cuda: str | None
) -> list[Finding]:
    image = snap.value("container.cuda")
    if not image:
        return []
    row = knowledge.driver_row(str(image))
    need = str(row["linux_min"]) if row else None
    if dv is not None and need:
        below = _driver_below(dv, versions.parse(need))
    else:
        have, want = versions.major_minor(str(driver_cuda or "")), versions.major_minor(str(image))
        below = bool(have and want and have < want)
    if not below:
        return []
    clauses = knowledge.table("cuda_driver")["image_brand_clauses"]
    image_mm = versions.major_minor(str(image))
    gpu_names = " ".join(str(g.get("name") or "") for g in view.gpus(snap))
    said = " ".join(str(snap.value(f"stated.{k}") or "") for k in ("container", "other"))
    # the driver's branch is one the image's brand clauses name, unless nvidia-container-cli's refusal is quoted:
    # an NGC release's own list of data center branches (knowledge/ngc.toml), else those of NVIDIA's CUDA 12 images
    ngc = snap.value("container.ngc") or {}
    branches = (
        [int(str(b).split(".")[0]) for b in ngc["datacenter"]]
        if ngc.get("datacenter")
        else clauses["branches"]
    )
    branch = dv[0] if dv is not None and dv[0] in branches else None
    branch_clause = (
        branch is not None
        and image_mm is not None
        and (bool(ngc.get("datacenter")) or image_mm[0] == clauses["cuda_major"])
        and not REFUSED.search(said)
    )
    cloud = CLOUD.search(" ".join([said, str((snap.value("host.os") or {}).get("name") or "")]))
    if branch_clause and (
        (gpu_names and not view.CONSUMER_GPU.search(gpu_names)) or (not gpu_names and cloud)
    ):
        return []  # a datacenter or workstation GPU (a cloud's) on a forward-compatibility branch: the clause admits it
    which = f"Driver {driver}" if dv is not None else f"The driver (CUDA {driver_cuda})"
    if branch_clause and branch is not None:
        return [
            finding(
                "container-needs-newer-driver",
                "driver-too-old",
                Severity.ERROR if gpu_names else Severity.WARNING,
                f"{which} is older than the CUDA {image} the container image requires; the image's "
                "NVIDIA_REQUIRE_CUDA admits its branch for datacenter and workstation GPUs only "
                f"(brand=tesla,driver>={branch},driver<{branch + 1}, with the image's cuda-compat libraries), "
                + (
                    f"not for {gpu_names} ('unsatisfied condition: cuda>=...')"
                    if gpu_names
                    else "and refuses a GeForce or TITAN card ('unsatisfied condition: cuda>=...')"
                ),
                LAYER,
                evidence=[
                    f"container.cuda = {image}",
                    f"driver = {driver}",
                    f"GPU = {gpu_names or 'not stated'}",
                ],
                fix=[
                    f"On a GeForce or TITAN card: upgrade the NVIDIA driver to {need} or newer (CUDA {image}), or use "
                    f"an image built on CUDA {driver_cuda or 'your driver runs'} or older",
                    "See which brand the driver reports: nvidia-smi -q | grep 'Product Brand'",
                ],
            )
        ]
    return [
        finding(
            "container-needs-newer-driver",
            "driver-too-old",
            Severity.ERROR,
            f"{which} is older than the CUDA {image} the container image requires: nvidia-container-cli refuses "
            "to start it ('unsatisfied condition: cuda>=...'); containers get no minor-version compatibility here",
            LAYER,
            evidence=[f"container.cuda = {image}", f"driver = {driver if dv is not None else driver_cuda}"],
            fix=[
                f"Upgrade the NVIDIA driver to {need} or newer (CUDA {image})"
                if need
                else "Upgrade the NVIDIA driver",
                (
                    f"Or use an image tag built on CUDA {driver_cuda} or older, which your driver runs (NVIDIA's "
                    f"base images: a nvidia/cuda:{driver_cuda} tag)"
                    if driver_cuda
                    else "Or use an image tag built on an older CUDA that your driver supports (nvidia-smi shows "
                    "the newest CUDA the driver runs)"
                )
                + ", or NVIDIA_DISABLE_REQUIRE=1 on a datacenter GPU with the cuda-compat package in the image",
            ],
        )
    ]


def _driver_below(driver: versions.Version | None, need: versions.Version | None) -> bool:
    """True only when the driver is surely older than `need`; a bare branch ("410") is
    compared by branch, since any 410.x may be the one installed."""
    if driver is None or need is None:
        return False
    if len(driver) == 1:
        return driver[0] < need[0]
    return not versions.at_least(driver, need)


def _downgrade_hint(name: str, driver_cuda: str | None, built: versions.Version) -> str:
    target = knowledge.torch_variant_for_driver(driver_cuda) if name == "torch" and driver_cuda else None
    if target:
        return f"Install a PyTorch build for the CUDA your driver supports ({driver_cuda}): pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{target}"
    if name == "jax":
        return jax_builds.install_step(driver_cuda)
    if driver_cuda is None:  # older than every CUDA's driver floor known: no build runs on it
        return f"No {view.LABEL.get(name, name)} build runs on this driver: upgrade it"
    return f"Install a {view.LABEL.get(name, name)} build made for CUDA {driver_cuda} or older (built with {versions.fmt(built)})"


def _cuda_wanted_without_nvidia(snap: Snapshot) -> list[Finding]:
    """CUDA wanted (a CUDA provider, a CUDA error quoted) where the only GPU stated is another vendor's: no
    CUDA build, library or driver version makes one appear."""
    others, wanted = snap.value("gpu.not_nvidia"), snap.value("stated.gpu_wanted")
    if not others or snap.value("gpu.devices") or not wanted:
        return []
    return [
        finding(
            "no-nvidia-gpu",
            "no-gpu-visible",
            Severity.ERROR,
            f"CUDA is wanted ({wanted}), but the GPU stated is {', '.join(others)}: CUDA runs on NVIDIA GPUs only",
            LAYER,
            evidence=[f"gpu (stated): {', '.join(others)}", f"stated: {wanted}"],
            fix=[
                "Use a build or provider for that GPU (Intel: OpenVINO or PyTorch's XPU build; AMD: ROCm builds), "
                "or the CPU one; CUDA needs an NVIDIA GPU and its driver"
            ],
        )
    ]


@check(
    "no-gpu-visible",
    "no-gpu-visible",
    LAYER,
    requires_any=(*FRAMEWORK_FACTS, "host.container_gpus", "gpu.not_nvidia"),
)
def no_gpu_visible(snap: Snapshot) -> list[Finding]:
    """A CUDA framework is installed but the process cannot see any GPU (no driver, hidden, bad index)."""
    started = snap.value("host.container_gpus")
    if started:  # said of the container whatever the framework: it was started without the GPUs
        return [
            finding(
                "container-without-gpus",
                "no-gpu-visible",
                Severity.ERROR,
                f"The container was started without the GPUs ({started}): a container runtime passes GPUs only when asked",
                LAYER,
                evidence=[f"host.container_gpus = {started}"],
                fix=[
                    knowledge.container_gpus_step(snap.value("host.container"))
                    or str(knowledge.container_gpus_step("docker")),
                    "Check inside the container: nvidia-smi lists the GPU",
                ],
            )
        ]
    builds = view.cuda_frameworks(snap)
    if not builds:
        return _cuda_wanted_without_nvidia(snap)
    env = view.env(snap)
    names = ", ".join(view.describe(n, i) for n, i in builds)
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    devices = snap.value("gpu.devices")
    container = _container_hides_compute(env, names)
    if container:
        return [container]
    hidden = _visible_devices_finding(cvd, devices, names)
    if hidden:
        return [hidden]
    others = snap.value("gpu.not_nvidia")
    if others and not devices:
        return [
            finding(
                "no-nvidia-gpu",
                "no-gpu-visible",
                Severity.ERROR,
                f"{names} is a CUDA build, but the GPU stated is {', '.join(others)}: CUDA runs on NVIDIA GPUs only",
                LAYER,
                evidence=[f"gpu (stated): {', '.join(others)}"],
                fix=[
                    "Run on a machine with an NVIDIA GPU, or install the CPU build (the GPU stated has no CUDA)"
                ],
            )
        ]
    if snap.status("driver.version").value == "absent":
        pci = snap.value("gpu.pci") or []
        what = (
            f"{len(pci)} NVIDIA GPU(s) on the PCI bus but no NVIDIA driver is loaded"
            if pci
            else "no NVIDIA driver is installed and no GPU is visible"
        )
        return [
            finding(
                "no-driver",
                "no-gpu-visible",
                Severity.ERROR if pci else Severity.WARNING,
                f"{names} is installed, but {what}",
                LAYER,
                evidence=[f"driver.version: {getattr(snap.get('driver.version'), 'detail', 'absent')}"]
                + [f"pci {p['slot']} driver={p['driver']}" for p in pci],
                fix=[
                    "Install the NVIDIA driver (e.g. sudo apt install nvidia-driver-550) and reboot"
                    if pci
                    else "Run on a machine with an NVIDIA GPU, or install the CPU build to save disk space"
                ],
            )
        ]
    return []


def _container_hides_compute(env: dict[str, str], names: str) -> Finding | None:
    """nvidia-container-toolkit settings that leave a container without usable GPUs or libcuda."""
    nvd = env.get("NVIDIA_VISIBLE_DEVICES")
    caps = env.get("NVIDIA_DRIVER_CAPABILITIES")
    if nvd is not None and nvd.strip().lower() in ("none", "void", ""):
        what, fix = (
            f"NVIDIA_VISIBLE_DEVICES={nvd!r}: the container was started without GPUs",
            "docker run --gpus all ...  (or NVIDIA_VISIBLE_DEVICES=all)",
        )
    elif caps is not None and not ({"compute", "all"} & {c.strip().lower() for c in caps.split(",")}):
        what, fix = (
            f"NVIDIA_DRIVER_CAPABILITIES={caps!r} lacks 'compute': nvidia-smi works but libcuda is not mounted",
            "docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility ...",
        )
    else:
        return None
    return finding(
        "container-without-gpu-compute",
        "no-gpu-visible",
        Severity.ERROR,
        f"{what}, so {names} cannot use CUDA",
        LAYER,
        evidence=[f"env:NVIDIA_VISIBLE_DEVICES = {nvd!r}", f"env:NVIDIA_DRIVER_CAPABILITIES = {caps!r}"],
        fix=[fix],
    )


def _visible_devices_finding(cvd: str | None, devices: Any, names: str) -> Finding | None:
    """CUDA_VISIBLE_DEVICES hiding every GPU, or cut short where CUDA stops reading it."""
    if cvd is None:
        return None
    gpus = devices if isinstance(devices, list) and devices else None
    uuids = tuple(str(g["uuid"]) for g in gpus or [] if g.get("uuid"))
    seen = visible_devices.read(cvd, len(gpus) if gpus else None, uuids)
    if seen.stopped_at is None:
        return None
    evidence = [f"env:CUDA_VISIBLE_DEVICES = {cvd!r}"] + ([f"gpu.devices: {len(gpus)}"] if gpus else [])
    check_id = "cuda-visible-devices-bad-index" if seen.no_such_gpu else "cuda-visible-devices-hides-gpus"
    if seen.gpus:
        title = f"CUDA_VISIBLE_DEVICES={cvd!r} leaves only GPU {', '.join(seen.gpus)} visible to {names}: {seen.why}, and CUDA stops reading the list there"
    else:
        title = f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU from {names}: {seen.why}"
    return finding(
        check_id,
        "no-gpu-visible",
        Severity.ERROR,
        title,
        LAYER,
        evidence=evidence,
        fix=[
            f"export CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(len(gpus)))}  (GPUs that exist, each once)"
            if gpus
            else "unset CUDA_VISIBLE_DEVICES (or export CUDA_VISIBLE_DEVICES=0)"
        ],
    )


def _cuinit_row(rc: int) -> dict[str, Any]:
    row = next((r for r in knowledge.table("cuinit")["code"] if r["code"] == rc), None)
    return row or {
        "cause": "no-gpu-visible",
        "title": f"cuInit returned {rc}: the CUDA driver API cannot start, so no CUDA program can",
        "fix": [],
    }


@check("cuinit-failed", "no-gpu-visible", LAYER, requires=("driver.cuinit",))
def cuinit_failed(snap: Snapshot) -> list[Finding]:
    """cuInit failed in a clean child process: the driver API itself cannot start."""
    rc = snap.value("driver.cuinit")
    if not isinstance(rc, int) or rc == 0:
        return []
    row = _cuinit_row(rc)
    evidence = [f"driver.cuinit = {rc}", *_device_node_evidence(rc, snap)]
    return [
        finding(
            "cuinit-failed",
            row["cause"],
            Severity.ERROR,
            row["title"],
            LAYER,
            evidence=evidence,
            fix=row["fix"],
        )
    ]


def _device_node_evidence(rc: int, snap: Snapshot) -> list[str]:
    """What /dev says about the two codes whose cause shows there: NVSwitch nodes (802), nvidia-uvm (999)."""
    nodes = [str(n) for n in snap.value("gpu.device_nodes") or []]
    if rc == 802:
        switches = [n for n in nodes if re.match(r"/dev/nvidia-nvswitch\d+$", n)]
        return (
            [f"{len(switches)} NVSwitch device(s) in /dev: the Fabric Manager must run"] if switches else []
        )
    if rc == 999 and nodes and "/dev/nvidia-uvm" not in nodes:
        return ["/dev/nvidia-uvm is missing: CUDA cannot start without it"]
    return []


@check("nvml-driver-mismatch", "no-gpu-visible", LAYER, requires=("driver.nvml_error",))
def nvml_driver_mismatch(snap: Snapshot) -> list[Finding]:
    """NVML cannot talk to the kernel driver (library/driver version mismatch after an upgrade)."""
    err = str(snap.value("driver.nvml_error"))
    if "mismatch" not in err.lower():
        return []
    return [
        finding(
            "nvml-driver-mismatch",
            "no-gpu-visible",
            Severity.ERROR,
            "NVIDIA user-space libraries and the loaded kernel module have different versions (driver upgraded without reboot)",
            LAYER,
            evidence=[f"nvmlInit: {err}"],
            fix=[
                "Reboot, or reload the modules: sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia"
            ],
        )
    ]


@check("toolkit-newer-than-driver", "driver-too-old", LAYER, requires=("driver.version", "cuda.toolkits"))
def toolkit_newer_than_driver(snap: Snapshot) -> list[Finding]:
    """An installed CUDA toolkit needs a newer driver than the one installed: what it builds will not run."""
    driver = str(snap.value("driver.version"))
    dv = versions.parse(driver)
    out = _ptx_newer_than_driver(snap)
    runs = _cuda_the_driver_reports(snap)
    for tk in snap.value("cuda.toolkits") or []:
        floor = knowledge.driver_floor(str(tk.get("version") or ""))
        if floor is None or not _driver_below(dv, versions.parse(floor[0])):
            continue
        if runs is not None and (versions.major_minor(tk.get("version")) or (99,)) <= runs:
            continue  # the driver itself reports a CUDA this new (a release between the table's rows)
        out.append(
            finding(
                "toolkit-needs-newer-driver",
                "driver-too-old",
                Severity.WARNING,
                f"CUDA toolkit {tk.get('version')} ({tk.get('root')}) needs driver >= {floor[0]}, but the driver is {driver}",
                LAYER,
                evidence=[
                    f"driver.version = {driver}",
                    f"toolkit {tk.get('root')}: CUDA {tk.get('version')}",
                    floor[1],
                ],
                fix=[
                    f"Upgrade the NVIDIA driver to {floor[0]} or newer, or use a toolkit no newer than CUDA {snap.value('driver.cuda_version') or knowledge.max_cuda_for_driver(driver, view.platform(snap) == 'windows')}"
                ],
            )
        )
    return out


def _cuda_the_driver_reports(snap: Snapshot) -> tuple[int, ...] | None:
    """The CUDA the driver says it runs (cuDriverGetVersion, nvidia-smi's 'CUDA Version'), not one derived
    from its version number by the table."""
    fact = snap.get("driver.cuda_version")
    if fact is None or not fact.known or "derived" in fact.source:
        return None
    return versions.major_minor(fact.value)


def _ptx_newer_than_driver(snap: Snapshot) -> list[Finding]:
    """ptxas/nvcc of a toolkit newer than the driver's CUDA emit PTX this driver cannot JIT-load."""
    driver_cuda = versions.major_minor(snap.value("driver.cuda_version"))
    if driver_cuda is None:
        return []
    out = []
    for tk in snap.value("cuda.toolkits") or []:
        tv = versions.major_minor(str(tk.get("version") or ""))
        if tv is None or versions.cmp(tv, driver_cuda) <= 0 or (not tk.get("stated") and not tk.get("ptxas")):
            continue
        out.append(
            finding(
                "ptxas-newer-than-driver-cuda",
                "toolchain-not-found",
                Severity.WARNING,
                f"CUDA {tk.get('version')} compilers ({tk.get('root')}) are newer than the CUDA {versions.fmt(driver_cuda)} the driver supports: PTX they emit cannot be loaded by this driver (XLA, Triton and torch extensions JIT through them)",
                LAYER,
                evidence=[
                    f"toolkit {tk.get('root')}: CUDA {tk.get('version')}",
                    f"driver.cuda_version = {versions.fmt(driver_cuda)}",
                ],
                fix=[older_ptxas_step(versions.fmt(driver_cuda))],
                also=["driver-too-old"],
            )
        )
    return out


@check(
    "driver-userspace-mismatch",
    "multiple-toolkits",
    LAYER,
    requires=("driver.version", "driver.userspace_version"),
)
def driver_userspace_mismatch(snap: Snapshot) -> list[Finding]:
    """The user-space driver library (libcuda / NVML) and the kernel module have different versions."""
    kernel, user = str(snap.value("driver.version")), str(snap.value("driver.userspace_version"))
    if versions.parse(kernel) == versions.parse(user):
        return []
    cuda = (snap.value("driver.libraries") or {}).get("libcuda.so.1") or {}
    evidence = [f"kernel module: {kernel}", f"user-space driver library: {user}"]
    if cuda.get("real"):
        evidence.append(f"libcuda.so.1 -> {cuda['real']} (via {cuda.get('via')})")
    if cuda.get("via") in ("ldcache", "default"):
        title = (
            f"The driver's libraries are {user} but the loaded kernel module is still {kernel}: "
            "the driver was upgraded (or downgraded) without a reboot"
        )
        fix = [
            "Reboot, or reload the module: stop every GPU process, then sudo rmmod nvidia_uvm nvidia_drm "
            "nvidia_modeset nvidia && sudo modprobe nvidia",
            "To keep it from happening again, hold the driver packages out of unattended upgrades "
            "(Ubuntu: sudo apt-mark hold 'libnvidia-*' 'nvidia-*')",
        ]
    else:
        title = f"The kernel module is driver {kernel} but the user-space libcuda is {user}: a stale copy of the driver libraries is loaded"
        fix = [
            "Find the stale libcuda: ldconfig -p | grep libcuda (and remove old copies from LD_LIBRARY_PATH / ld.so.conf.d)",
            "Reinstall the driver so user-space and kernel parts match, then reboot",
        ]
    return [
        finding("driver-userspace-mismatch", "multiple-toolkits", Severity.ERROR, title, LAYER, evidence, fix)
    ]
