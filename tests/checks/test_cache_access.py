"""Kernel caches this user cannot write: the fact (read as an unprivileged user from real
directories), the jit-cache-unwritable check, and the explain signatures it confirms.

The layouts are real: directories owned by root and read by the `nobody` user from a worker
process when the tests run as root (as CI does), or made read-only when they run as a user.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pwd
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cudoctor.explainer import rank, scan
from cudoctor.facts import caches
from cudoctor.model import Snapshot
from tests.conftest import finding_ids, run_check, stated

NOBODY = 65534
ROOT_RUN = os.geteuid() == 0
CUBLAS_NOT_INITIALIZED = (
    "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"
)


def _become_nobody() -> None:
    """A pool worker's start: load what the fact needs while still root, then drop to nobody."""
    caches.jit_caches({"HOME": "/nonexistent"})
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _jit_caches(env: dict[str, str]) -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = caches.jit_caches(env).value
    return value


@pytest.fixture(scope="module")
def unprivileged() -> Iterator[Any]:
    """A worker process running as `nobody` when we are root (root may write anywhere); a fresh
    interpreter (spawn), so no thread of this test process is copied into it."""
    if not ROOT_RUN:
        yield None
        return
    with multiprocessing.get_context("spawn").Pool(1, initializer=_become_nobody) as pool:
        yield pool


@pytest.fixture
def home() -> Iterator[Path]:
    """A home directory the unprivileged user owns, in a directory that user can reach."""
    base = Path(tempfile.mkdtemp(prefix="cudoctor-home-", dir="/tmp"))
    base.chmod(0o755)
    home = base / "u"
    home.mkdir()
    if ROOT_RUN:
        os.chown(home, NOBODY, NOBODY)
    yield home
    for path in [base, *base.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(base)


def left_by_sudo(path: Path) -> None:
    """What a run under sudo leaves: a directory this user cannot write (root's; read-only for a user)."""
    path.mkdir(parents=True, exist_ok=True)
    if not ROOT_RUN:
        path.chmod(0o555)


def owner(path: Path) -> str:
    return pwd.getpwuid(path.stat().st_uid).pw_name


def cuda_cache(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c for c in entries if c["tool"] == "CUDA driver")


@pytest.fixture
def collect(unprivileged: Any) -> Callable[..., list[dict[str, Any]]]:
    def run(home: Path, **env: str) -> list[dict[str, Any]]:
        environ = {"HOME": str(home), "TMPDIR": str(home), **env}
        return unprivileged.apply(_jit_caches, (environ,)) if unprivileged else _jit_caches(environ)

    return run


# ---------------------------------------------------------------- the fact
def test_a_root_owned_nv_directory_blocks_the_drivers_cache_at_its_top(
    home: Path, collect: Callable[..., list[dict[str, Any]]]
) -> None:
    left_by_sudo(home / ".nv" / "ComputeCache")
    left_by_sudo(home / ".nv")
    cuda = cuda_cache(collect(home))
    assert cuda["path"] == str(home / ".nv" / "ComputeCache") and cuda["writable"] is False
    assert cuda["blocked_at"] == str(home / ".nv")  # take back ~/.nv, not only ComputeCache
    assert cuda["owner"] == owner(home / ".nv") and cuda["blocked_in_home"] is True


def test_a_cache_not_created_yet_under_a_home_the_user_owns_is_writable(
    home: Path, collect: Callable[..., list[dict[str, Any]]]
) -> None:
    assert all(c["writable"] for c in collect(home))


def test_a_root_owned_file_inside_a_writable_cache_is_named(
    home: Path, collect: Callable[..., list[dict[str, Any]]]
) -> None:
    cache = home / ".triton" / "cache"
    cache.mkdir(parents=True)
    (cache / "index").write_text("")
    if ROOT_RUN:
        for path in (home / ".triton", cache):
            os.chown(path, NOBODY, NOBODY)
    else:
        (cache / "index").chmod(0o444)
    triton = next(c for c in collect(home) if c["tool"] == "Triton")
    assert triton["writable"] is False and triton["foreign_entries"] == ["index"]
    assert triton["blocked_at"] == str(cache / "index")


def test_a_home_the_user_cannot_write_is_no_leftover_to_take_back(
    home: Path, collect: Callable[..., list[dict[str, Any]]]
) -> None:
    if ROOT_RUN:
        os.chown(home, 0, 0)
    else:
        home.chmod(0o555)
    triton = next(c for c in collect(home) if c["tool"] == "Triton")
    assert triton["writable"] is False and triton["blocked_at"] == str(home)
    assert triton["blocked_in_home"] is False


def test_cuda_cache_disable_leaves_the_drivers_cache_out(
    home: Path, collect: Callable[..., list[dict[str, Any]]]
) -> None:
    left_by_sudo(home / ".nv")
    tools = {c["tool"] for c in collect(home, CUDA_CACHE_DISABLE="1")}
    assert "CUDA driver" not in tools and "Triton" in tools


# ---------------------------------------------------------------- the check
def entry(tool: str, path: str, **over: Any) -> dict[str, Any]:
    base = {
        "tool": tool,
        "path": path,
        "set_by": "default",
        "exists": True,
        "mount_point": "/",
        "fstype": "ext4",
    }
    return {**base, "writable": True, **over}


ROOT_NV = entry(
    "CUDA driver",
    "/home/u/.nv/ComputeCache",
    writable=False,
    blocked_at="/home/u/.nv",
    owner="root",
    blocked_in_home=True,
)


def test_the_check_fires_on_a_root_owned_nv_and_takes_it_back() -> None:
    r = run_check("jit-cache-unwritable", stated({}, host__jit_caches=[ROOT_NV]))
    assert finding_ids(r) == ["jit-cache-unwritable"]
    f = r.findings[0]
    assert "/home/u/.nv belongs to root" in f.title and "CUBLAS_STATUS_NOT_INITIALIZED" in f.title
    assert f.fix[0].startswith("sudo chown -R $(id -un): /home/u/.nv ")


def test_the_check_moves_a_cache_whose_home_is_not_writable() -> None:
    blocked = entry(
        "Triton", "/app/.triton/cache", exists=False, writable=False, blocked_at="/app", owner="root"
    )
    snap = stated({}, host__jit_caches=[blocked], python__packages={"torch": "2.3.0", "triton": "2.3.0"})
    f = run_check("jit-cache-unwritable", snap).findings[0]
    assert f.fix[0].startswith("export TRITON_CACHE_DIR=/tmp/$USER/triton-cache")
    assert not any("chown" in step for step in f.fix)


def test_the_check_is_silent_on_writable_caches_and_unused_tools() -> None:
    healthy = [entry("CUDA driver", "/home/u/.nv/ComputeCache"), entry("Triton", "/home/u/.triton/cache")]
    assert run_check("jit-cache-unwritable", stated({}, host__jit_caches=healthy)).findings == ()
    cupy_only = entry("CuPy", "/home/u/.cupy/kernel_cache", writable=False, blocked_at="/home/u/.cupy")
    no_cupy = stated({}, host__jit_caches=[cupy_only], python__packages={"numpy": "2.0.0"})
    assert run_check("jit-cache-unwritable", no_cupy).findings == ()


def test_the_check_without_the_fact_is_unknown() -> None:
    assert run_check("jit-cache-unwritable", stated({"gpu": "A100"})).outcome == "unknown"


def test_the_drivers_cache_on_nfs_is_no_race() -> None:
    on_nfs = entry("CUDA driver", "/home/u/.nv/ComputeCache", fstype="nfs4", mount_point="/home")
    assert run_check("jit-cache-network-fs", stated({}, host__jit_caches=[on_nfs])).findings == ()


# ---------------------------------------------------------------- explain
def explain(text: str, snap: Snapshot) -> rank.Explanation:
    return rank.explain(scan.scan(io.BytesIO(text.encode())), snap)


def test_cublas_not_initialized_with_a_root_owned_nv_points_at_it() -> None:
    bare = explain(CUBLAS_NOT_INITIALIZED, Snapshot())
    assert bare.causes[0].id == "gpu-oom"
    facts = explain(CUBLAS_NOT_INITIALIZED, stated({}, host__jit_caches=[ROOT_NV]))
    assert facts.causes[0].id == "jit-cache-unwritable"
    assert rank.cause_json(facts.causes, 0)["fix"][0].startswith("sudo chown -R $(id -un): /home/u/.nv")


def test_a_root_owned_nv_does_not_confirm_unrelated_errors() -> None:
    exp = explain("RuntimeError: CUDA error: out of memory", stated({}, host__jit_caches=[ROOT_NV]))
    assert exp.causes[0].id == "gpu-oom"
    assert all(c.id != "jit-cache-unwritable" or c.score < 0.2 for c in exp.causes)


def test_triton_permission_denied_on_its_cache_is_read_without_facts() -> None:
    line = "ERROR:    PermissionError: [Errno 13] Permission denied: '/app/aphrodite-engine/.triton'"
    exp = explain(line, Snapshot())
    assert exp.root is not None and exp.root.sig.id == "jit-cache-unwritable/permission-denied"
    assert exp.causes[0].id == "jit-cache-unwritable"
    assert "ls -ld /app/aphrodite-engine/.triton" in exp.causes[0].fixes[0]


def test_an_extension_folder_another_user_made_blocks_torchs_run_time_builds(
    home: Path, collect: Callable[..., list[dict[str, Any]]]
) -> None:
    """pytorch/pytorch#34238: the first user's build made the shared folder; the next user's fails."""
    shared = home / "shared-cache"
    shared.mkdir()
    if ROOT_RUN:
        os.chown(shared, NOBODY, NOBODY)  # this user's own cache folder; only the extensions folder is not
    left_by_sudo(shared / "torch_extensions")
    built = next(
        c for c in collect(home, XDG_CACHE_HOME=str(shared)) if c["tool"].startswith("PyTorch extensions")
    )
    assert built["path"] == str(shared / "torch_extensions") and built["writable"] is False
    assert built["blocked_at"] == str(shared / "torch_extensions")
    snap = stated({}, host__jit_caches=[built], python__packages={"torch": "2.3.0"})
    fix = run_check("jit-cache-unwritable", snap).findings[0].fix
    assert any("export TORCH_EXTENSIONS_DIR=/tmp/$USER/pytorch-extensions-cache" in step for step in fix)


def test_windows_access_denied_inside_the_inductor_cache_names_the_windows_steps() -> None:
    """chengzeyi/Comfy-WaveSpeed#123: an Italian Windows; deleting torchinductor_<user> fixed it."""
    line = (
        "PermissionError: [WinError 5] Accesso negato: 'C:\\\\Users\\\\DAVIDE\\\\AppData\\\\Local\\\\Temp\\\\"
        "torchinductor_DAVIDE\\\\triton\\\\0\\\\tmp.ed5f8fed' -> 'C:\\\\Users\\\\DAVIDE\\\\AppData\\\\Local\\\\Temp\\\\"
        "torchinductor_DAVIDE\\\\triton\\\\0\\\\9Uj2sVu8'"
    )
    exp = explain(line, Snapshot())
    assert exp.root is not None and exp.root.sig.id == "jit-cache-unwritable/permission-denied"
    assert exp.causes[0].id == "jit-cache-unwritable"
    assert any(step.startswith("On Windows ([WinError 5]") for step in exp.causes[0].fixes)
    assert explain("PermissionError: [WinError 5] Access is denied", Snapshot()).root is None


def test_a_home_of_slash_is_read_as_a_cache_with_nowhere_to_go() -> None:
    """opendatahub-io/ilab-on-ocp#26: an OpenShift pod's arbitrary user has HOME=/."""
    exp = explain("[rank1]: PermissionError: [Errno 13] Permission denied: '/.cache'", Snapshot())
    assert exp.root is not None and exp.root.sig.id == "jit-cache-unwritable/home-is-root"
    assert exp.causes[0].id == "jit-cache-unwritable" and "HOME=/tmp" in exp.causes[0].fixes[0]
    hub = explain(
        "PermissionError: [Errno 13] Permission denied: '/home/u/.cache/huggingface/hub'", Snapshot()
    )
    assert all(c.id != "jit-cache-unwritable" for c in hub.causes)


def test_torch_compile_dying_on_an_nvcc_it_may_not_run_is_torchs_bug() -> None:
    """pytorch/pytorch#185733 (WSL2): the nvcc --version probe catches a missing nvcc, not EACCES."""
    exp = explain(
        "torch._inductor.exc.InductorError: PermissionError: [Errno 13] Permission denied: 'nvcc'", Snapshot()
    )
    assert exp.root is not None and exp.root.sig.id == "library-bug/inductor-nvcc-permission"
    assert [c.id for c in exp.causes[:2]] == ["library-bug", "env-path-misconfig"]
    missing = explain("FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'", Snapshot())
    assert missing.root is None or missing.root.sig.id != "library-bug/inductor-nvcc-permission"
