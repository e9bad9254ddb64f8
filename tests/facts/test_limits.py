"""Process limits as facts (read for real under rlimits set in a child process, and from cgroup files),
the two checks on them, and how their findings confirm an OpenBLAS failure in a log, and only that."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudoctor.facts.limits import cgroup_pids_max
from cudoctor.model import Snapshot
from tests.conftest import explained, run_check, stated

GIB = 1 << 30
# numpy 2.4 (OpenBLAS 0.3.31) imported here under ulimit -v 80000 with OPENBLAS_NUM_THREADS=64
OPENBLAS_NO_BUFFERS = "OpenBLAS error: Memory allocation still failed after 10 retries, giving up.\n"


def test_the_limits_are_read_as_the_process_has_them() -> None:
    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * GIB, 3 * GIB))
        resource.setrlimit(resource.RLIMIT_STACK, (16 << 20, resource.getrlimit(resource.RLIMIT_STACK)[1]))
        resource.setrlimit(resource.RLIMIT_NPROC, (500, resource.getrlimit(resource.RLIMIT_NPROC)[1]))

    code = "import json; from cudoctor.facts.limits import process_limits; print(json.dumps(process_limits().value))"
    done = subprocess.run(
        [sys.executable, "-c", code], preexec_fn=lower, capture_output=True, text=True, timeout=60, check=True
    )
    got = json.loads(done.stdout)
    assert got["address_space_bytes"] == 3 * GIB
    assert got["stack_bytes"] == 16 << 20
    assert got["threads_per_user"] == 500
    assert got["cpus"] >= 1 and isinstance(got["root"], bool)


def test_an_unlimited_address_space_reads_as_none() -> None:
    code = "import json; from cudoctor.facts.limits import process_limits; print(json.dumps(process_limits().value))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        assert json.loads(done.stdout)["address_space_bytes"] is None


def test_the_cgroup_pids_limit_is_read_from_its_file(tmp_path: Path) -> None:
    limited, unlimited = tmp_path / "a", tmp_path / "b"
    limited.write_text("512\n")
    unlimited.write_text("max\n")
    assert cgroup_pids_max((str(tmp_path / "missing"), str(limited))) == 512
    assert cgroup_pids_max((str(unlimited),)) is None
    assert cgroup_pids_max((str(tmp_path / "missing"),)) is None


def limits(**values: Any) -> dict[str, Any]:
    base = {
        "threads_per_user": None,
        "address_space_bytes": None,
        "stack_bytes": 8 << 20,
        "cgroup_pids_max": None,
        "cpus": 64,
        "root": False,
    }
    return {**base, **values}


def outcome(check_id: str, snap: Snapshot) -> tuple[str, list[str]]:
    r = run_check(check_id, snap)
    return r.outcome, [f.id for f in r.findings]


def test_a_thread_limit_few_blas_processes_fit_under_is_reported() -> None:
    snap = stated({}, host__limits=limits(threads_per_user=512))  # willsheffler/worms#2's limit
    result = run_check("blas-thread-limit", snap)
    assert [f.id for f in result.findings] == ["blas-thread-limit"]
    title = result.findings[0].title
    assert "512 threads" in title and "starts 64" in title and ": 8 such processes" in title
    assert any("OPENBLAS_NUM_THREADS" in s for s in result.findings[0].fix)


def test_root_is_exempt_from_the_user_limit_but_not_from_the_cgroups() -> None:
    assert outcome("blas-thread-limit", stated({}, host__limits=limits(threads_per_user=512, root=True))) == (
        "ok",
        [],
    )
    pids = stated({}, host__limits=limits(root=True, cgroup_pids_max=1024))
    assert outcome("blas-thread-limit", pids)[1] == ["blas-thread-limit"]


def test_fewer_threads_per_process_or_a_roomy_limit_stay_silent() -> None:
    capped = stated({}, host__limits=limits(threads_per_user=512), env={"OPENBLAS_NUM_THREADS": "1"})
    assert outcome("blas-thread-limit", capped) == ("ok", [])
    roomy = stated({}, host__limits=limits(threads_per_user=1_031_280))
    assert outcome("blas-thread-limit", roomy) == ("ok", [])
    assert outcome("blas-thread-limit", stated({}))[0] == "unknown"


def test_a_small_address_space_is_reported_and_a_large_one_is_not() -> None:
    small = stated({}, host__limits=limits(address_space_bytes=4 * GIB))
    assert outcome("address-space-limit", small)[1] == ["address-space-limit"]
    assert outcome("address-space-limit", stated({}, host__limits=limits(address_space_bytes=64 * GIB))) == (
        "ok",
        [],
    )
    assert outcome("address-space-limit", stated({}, host__limits=limits())) == ("ok", [])
    assert outcome("address-space-limit", stated({}))[0] == "unknown"


def test_the_limit_confirms_openblas_buffers_that_could_not_be_mapped() -> None:
    capped = explained(OPENBLAS_NO_BUFFERS, stated({}, host__limits=limits(address_space_bytes=2 * GIB)))
    free = explained(OPENBLAS_NO_BUFFERS, stated({}, host__limits=limits()))
    assert capped.causes[0].id == free.causes[0].id == "host-oom"
    assert [f.id for f in capped.causes[0].findings] == ["address-space-limit"]
    assert capped.causes[0].score > free.causes[0].score


@pytest.mark.parametrize(
    "line",
    [
        "OMP: Error #15: Initializing libiomp5.so, but found libiomp5.so already initialized.\n",
        "Error: mkl-service + Intel(R) MKL: MKL_THREADING_LAYER=INTEL is incompatible with libgomp.so.1 library.\n",
    ],
)
def test_the_thread_limit_says_nothing_about_other_cpu_blas_errors(line: str) -> None:
    exp = explained(line, stated({}, host__limits=limits(threads_per_user=512)))
    assert all(f.id != "blas-thread-limit" for c in exp.causes for f in c.findings)


def test_the_thread_limit_confirms_a_thread_that_could_not_start() -> None:
    line = "OpenBLAS blas_thread_init: pthread_create failed for thread 9 of 64: Resource temporarily unavailable\n"
    exp = explained(line, stated({}, host__limits=limits(threads_per_user=512)))
    assert exp.causes[0].id == "cpu-blas-runtime"
    assert [f.id for f in exp.causes[0].findings] == ["blas-thread-limit"]


def test_the_cpu_blas_area_shows_the_limits_and_carries_their_finding() -> None:
    from cudoctor.commands import build_report
    from cudoctor.render.areas import areas

    snap = stated({}, host__limits=limits(threads_per_user=512), host__cpu={"model": "Xeon"})
    cpu = next(a for a in areas(build_report(snap)) if a.title == "CPU BLAS")
    assert cpu.summary == "Xeon, 64 usable CPUs"
    assert "host.limits" in cpu.fact_keys
    assert [f.id for f in cpu.findings] == ["blas-thread-limit"]
