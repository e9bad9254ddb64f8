"""JIT kernel caches on a network filesystem: the mount-table fact, the check, and the explain
signature that the check's finding confirms (and only that one).

The mount tables below follow proc(5)'s /proc/pid/mountinfo format; their mount points are real
temporary directories, since no network filesystem can be mounted here. The healthy case reads
this machine's real /proc/self/mountinfo.
"""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path
from typing import Any

import pytest

from cudoctor.explainer import rank, scan, signatures
from cudoctor.facts import caches, collect_live
from cudoctor.model import Snapshot, unknown
from tests.conftest import cudoctor, finding_ids, run_check, stated

# proc(5)'s own example line, then the fields a line has without optional fields
PROC5_EXAMPLE = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
TRITON_RACE = (
    "FileNotFoundError: [Errno 2] No such file or directory: '/mnt/petrelfs/caoweihan/.triton/cache/"
    "cff628804055ab05f902072733c9ab2d/_rms_norm_bwd_dx_fused.ttir.tmp.pid_15735_304289' -> "
    "'/mnt/petrelfs/caoweihan/.triton/cache/cff628804055ab05f902072733c9ab2d/_rms_norm_bwd_dx_fused.ttir'"
)
CUBLAS_FAILED = "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"


def mountinfo_line(point: Path | str, fstype: str, mount_id: int = 100) -> str:
    escaped = str(point).replace(" ", "\\040")
    return f"{mount_id} 1 0:{mount_id} / {escaped} rw,relatime shared:{mount_id} - {fstype} server:/export rw,vers=4.2"


def write_mounts(tmp_path: Path, *lines: str) -> Path:
    table = tmp_path / "mountinfo"
    table.write_text("\n".join(["22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw", *lines]) + "\n")
    return table


# ---------------------------------------------------------------- the mount table
def test_parse_mountinfo_reads_proc5_example_and_escaped_spaces() -> None:
    text = "\n".join([PROC5_EXAMPLE, mountinfo_line("/mnt/team share", "nfs4"), "garbage line", ""])
    assert caches.parse_mountinfo(text) == [("/mnt2", "ext3"), ("/mnt/team share", "nfs4")]


def test_parse_mountinfo_reads_this_machines_table() -> None:
    mounts = caches.parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    assert "/" in {point for point, _ in mounts}
    assert all(fstype and " " not in fstype for _, fstype in mounts)


def test_mount_of_takes_the_longest_mount_point_and_follows_symlinks(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "u").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".triton").symlink_to(shared / "u")  # triton#4002: ~/.triton linked elsewhere
    mounts = [("/", "ext4"), (str(tmp_path / "sha"), "nfs4"), (str(shared), "nfs4")]
    assert caches.mount_of(str(home / ".triton" / "cache"), mounts) == (str(shared), "nfs4")
    assert caches.mount_of(str(home / "not-yet" / "cache"), mounts) == ("/", "ext4")


def test_jit_caches_names_each_cache_its_setting_and_filesystem(tmp_path: Path) -> None:
    nfs = tmp_path / "nfs"
    (nfs / "triton").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    table = write_mounts(tmp_path, mountinfo_line(nfs, "nfs4"))
    env = {"TRITON_CACHE_DIR": str(nfs / "triton"), "HOME": str(home), "TMPDIR": str(tmp_path)}
    fact = caches.jit_caches(env, str(table))
    by_tool = {c["tool"]: c for c in fact.value}
    triton = by_tool["Triton"]
    assert (triton["set_by"], triton["fstype"], triton["mount_point"], triton["exists"]) == (
        "TRITON_CACHE_DIR",
        "nfs4",
        str(nfs),
        True,
    )
    cupy = by_tool["CuPy"]
    assert cupy["path"] == str(home / ".cupy" / "kernel_cache") and cupy["set_by"] == "default"
    assert by_tool["TorchInductor (torch.compile)"]["path"].startswith(str(tmp_path / "torchinductor_"))
    assert {c["fstype"] for t, c in by_tool.items() if t != "Triton"} == {"ext4"}


def test_triton_home_moves_the_default_cache(tmp_path: Path) -> None:
    table = write_mounts(tmp_path)
    fact = caches.jit_caches({"TRITON_HOME": str(tmp_path / "th")}, str(table))
    triton = next(c for c in fact.value if c["tool"] == "Triton")
    assert triton["path"] == str(tmp_path / "th" / ".triton" / "cache")


def test_jit_caches_without_a_mount_table_is_absent(tmp_path: Path) -> None:
    fact = caches.jit_caches({}, str(tmp_path / "no-such-mountinfo"))
    assert fact.status.value == "absent"


def test_live_snapshot_has_the_fact_and_this_machine_is_healthy() -> None:
    snap = collect_live()
    caches_here = snap.value("host.jit_caches")
    assert {c["tool"] for c in caches_here} >= {"Triton", "CuPy"}
    assert all(c["fstype"] for c in caches_here)
    assert run_check("jit-cache-network-fs", snap).findings == ()


# ---------------------------------------------------------------- the check
def cache_entry(tool: str, fstype: str, path: str = "/home/u/.triton/cache", **over: Any) -> dict[str, Any]:
    entry = {
        "tool": tool,
        "path": path,
        "set_by": "default",
        "exists": True,
        "mount_point": "/home",
        "fstype": fstype,
    }
    return {**entry, **over}


def cache_snapshot(*entries: dict[str, Any], packages: dict[str, str] | None = None) -> Snapshot:
    extra: dict[str, Any] = {"host__jit_caches": list(entries)}
    if packages is not None:
        extra["python__packages"] = packages
    return stated({}, **extra)


TORCH_PACKAGES = {"torch": "2.3.0", "triton": "2.3.0"}


def test_fires_for_a_triton_cache_on_nfs_with_a_local_fix() -> None:
    r = run_check(
        "jit-cache-network-fs", cache_snapshot(cache_entry("Triton", "nfs4"), packages=TORCH_PACKAGES)
    )
    assert finding_ids(r) == ["jit-cache-network-fs"]
    f = r.findings[0]
    assert "/home/u/.triton/cache" in f.title and "nfs4" in f.title and "its default" in f.title
    assert f.fix[0].startswith("export TRITON_CACHE_DIR=/tmp/$USER/triton-cache")
    assert "LOCAL_RANK" in f.fix[1]


def test_names_the_variable_that_put_the_cache_there() -> None:
    entry = cache_entry("CuPy", "lustre", path="/lustre/u/cupy", set_by="CUPY_CACHE_DIR")
    r = run_check("jit-cache-network-fs", cache_snapshot(entry, packages={"cupy-cuda12x": "13.3.0"}))
    assert "set by CUPY_CACHE_DIR" in r.findings[0].title
    assert r.findings[0].fix[0].startswith("export CUPY_CACHE_DIR=/tmp/$USER/cupy-cache")


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "tmpfs", "overlay", None])
def test_silent_on_local_filesystems(fstype: str | None) -> None:
    r = run_check(
        "jit-cache-network-fs", cache_snapshot(cache_entry("Triton", fstype), packages=TORCH_PACKAGES)
    )
    assert r.outcome == "ok" and not r.findings


def test_silent_when_no_installed_package_uses_that_cache() -> None:
    snap = cache_snapshot(cache_entry("CuPy", "nfs"), cache_entry("DeepGEMM", "nfs"), packages=TORCH_PACKAGES)
    assert run_check("jit-cache-network-fs", snap).findings == ()


def test_fires_when_the_packages_are_not_known() -> None:
    assert finding_ids(run_check("jit-cache-network-fs", cache_snapshot(cache_entry("CuPy", "gpfs")))) == [
        "jit-cache-network-fs"
    ]


def test_unknown_when_the_mount_table_could_not_be_read() -> None:
    snap = Snapshot()
    snap.add(unknown("host.jit_caches", "file:/proc/self/mountinfo", "Permission denied"))
    assert run_check("jit-cache-network-fs", snap).outcome == "unknown"


def test_list_checks_prints_whole_first_paragraphs() -> None:
    listing = cudoctor(["check", "--list-checks"]).stdout
    line = next(x for x in listing.splitlines() if x.startswith("jit-cache-network-fs"))
    assert line.endswith("race on its files there.")


# ---------------------------------------------------------------- explain
def explain(text: str, snap: Snapshot) -> rank.Explanation:
    return rank.explain(scan.scan(io.BytesIO(text.encode())), snap)


def test_the_race_is_explained_without_facts() -> None:
    exp = explain(TRITON_RACE, Snapshot())
    assert exp.root is not None and exp.root.sig.id == "library-bug/jit-cache-race"
    assert exp.causes[0].id == "library-bug"
    assert "TRITON_CACHE_DIR" in rank.cause_json(exp.causes, 0)["fix"][0]


def test_a_cache_on_nfs_confirms_the_race_and_its_fix_comes_first() -> None:
    on_nfs = cache_snapshot(cache_entry("Triton", "nfs4"), packages=TORCH_PACKAGES)
    bare, confirmed = explain(TRITON_RACE, Snapshot()), explain(TRITON_RACE, on_nfs)
    assert confirmed.causes[0].id == "library-bug"
    assert confirmed.causes[0].score >= bare.causes[0].score + rank.CONFIRM
    doc = rank.cause_json(confirmed.causes, 0)
    assert doc["fix"][0].startswith("export TRITON_CACHE_DIR=/tmp/$USER/triton-cache")
    assert any("nfs4" in e for e in doc["evidence"])


def test_a_cache_on_nfs_does_not_confirm_other_library_bug_errors() -> None:
    on_nfs = cache_snapshot(cache_entry("Triton", "nfs4"), packages=TORCH_PACKAGES)
    bare, with_facts = explain(CUBLAS_FAILED, Snapshot()), explain(CUBLAS_FAILED, on_nfs)
    score = {rc.id: rc.score for rc in with_facts.causes}
    assert score.get("library-bug") == next(rc.score for rc in bare.causes if rc.id == "library-bug")
    assert all(not rc.findings for rc in with_facts.causes)


def test_with_no_signature_matched_the_finding_still_counts_alone() -> None:
    on_nfs = cache_snapshot(cache_entry("Triton", "nfs4"), packages=TORCH_PACKAGES)
    exp = explain("training finished\n", on_nfs)
    assert [rc.id for rc in exp.causes] == ["library-bug"] and exp.causes[0].findings


def test_validate_rejects_confirmed_by_naming_a_missing_check_or_another_cause() -> None:
    sig = next(s for s in signatures.load() if s.id == "library-bug/jit-cache-race")
    assert signatures._confirmed_by_problems(sig) == []
    assert signatures._confirmed_by_problems(dataclasses.replace(sig, confirmed_by=("no-such-check",)))
    other = dataclasses.replace(sig, causes={"gpu-oom": 0.5})
    assert signatures._confirmed_by_problems(other)


def test_a_report_without_mounts_leaves_the_check_unknown() -> None:
    assert run_check("jit-cache-network-fs", stated({"gpu": "A100"})).outcome == "unknown"


def test_torch_extensions_build_under_the_users_cache_unless_told_otherwise(tmp_path: Path) -> None:
    table = write_mounts(tmp_path)
    home = str(tmp_path / "home")

    def extensions(env: dict[str, str]) -> dict[str, Any]:
        tools = caches.jit_caches({"HOME": home, **env}, str(table)).value
        return next(c for c in tools if c["tool"].startswith("PyTorch extensions"))

    assert extensions({})["path"] == os.path.join(home, ".cache", "torch_extensions")
    xdg = extensions({"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert xdg["path"] == str(tmp_path / "xdg" / "torch_extensions") and xdg["set_by"] == "default"
    moved = extensions({"TORCH_EXTENSIONS_DIR": "/scratch/ext"})
    assert (moved["path"], moved["set_by"]) == ("/scratch/ext", "TORCH_EXTENSIONS_DIR")
