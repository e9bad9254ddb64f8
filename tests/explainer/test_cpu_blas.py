"""CPU BLAS and OpenMP runtime failures: the thread limits and container policies that stop OpenBLAS
from starting its threads, MKL's threading layer, OpenBLAS's buffer table, the static TLS block,
Intel OpenMP after fork, numpy's Windows sanity check. Lines are from the threads each signature's
source names; two failures are made for real here with numpy's own OpenBLAS under rlimits."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tests.conftest import explained, first


@pytest.mark.parametrize(
    ("line", "sig_id", "cause", "why_says", "fix_says"),
    [
        (  # willsheffler/worms#2
            "OpenBLAS blas_thread_init: RLIMIT_NPROC 512 current, 1031280 max\n"
            "OpenBLAS blas_thread_init: pthread_create: Resource temporarily unavailable\n",
            "cpu-blas-runtime/thread-creation-failed",
            "cpu-blas-runtime",
            "ulimit -u",
            "OPENBLAS_NUM_THREADS=4",
        ),
        (  # HumanSignal/label-studio#3070, langgenius/dify#886
            "OpenBLAS blas_thread_init: pthread_create failed for thread 1 of 6: Operation not permitted\n"
            "OpenBLAS blas_thread_init: RLIMIT_NPROC -1 current, -1 max\n",
            "cpu-blas-runtime/thread-creation-not-permitted",
            "cpu-blas-runtime",
            "clone3",
            "seccomp=unconfined",
        ),
        (  # pytorch/ort#102
            "Error: mkl-service + Intel(R) MKL: MKL_THREADING_LAYER=INTEL is incompatible with libgomp.so.1 library.\n"
            "\tTry to import numpy first or set the threading layer accordingly. Set MKL_SERVICE_FORCE_INTEL to force it.\n",
            "cpu-blas-runtime/mkl-threading-layer-gnu",
            "cpu-blas-runtime",
            "GNU OpenMP (libgomp.so.1)",
            "MKL_THREADING_LAYER=GNU",
        ),
        (  # rocker-org/rocker-versioned2#820
            "OpenBLAS : Program is Terminated. Because you tried to allocate too many memory regions.\n"
            "This library was built to support a maximum of 128 threads - either rebuild OpenBLAS\n",
            "cpu-blas-runtime/openblas-too-many-memory-regions",
            "cpu-blas-runtime",
            "NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
        ),
        (  # NVIDIA-AI-IOT/torch2trt#563
            "OSError: /usr/lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static TLS block\n",
            "cpu-blas-runtime/static-tls-exhausted",
            "cpu-blas-runtime",
            "/usr/lib/aarch64-linux-gnu/libgomp.so.1 uses initial-exec",
            "LD_PRELOAD=/usr/lib/aarch64-linux-gnu/libgomp.so.1",
        ),
        (  # davidemms/OrthoFinder#356: OPENBLAS_NUM_THREADS did not help
            "OpenBLAS Warining : The number of CPU/Cores(144) is beyond the limit(64). Terminated.\n",
            "cpu-blas-runtime/openblas-cores-beyond-limit",
            "cpu-blas-runtime",
            "at most 64 CPUs and counts 144",
            "make NUM_THREADS=144",
        ),
        (  # Irrationone/cellassign#42
            "OpenBLAS : Program will terminate because you tried to start too many threads.\n",
            "cpu-blas-runtime/openblas-too-many-threads",
            "cpu-blas-runtime",
            "0.3.3",
            "OPENBLAS_NUM_THREADS",
        ),
        (  # visionml/pytracking#74
            "OMP: Error #13: Assertion failure at z_Linux_util.cpp(2361).\n"
            "OMP: Hint Please submit a bug report with this message, compile and run commands used.\n",
            "cpu-blas-runtime/intel-openmp-fork-assertion",
            "cpu-blas-runtime",
            "fork",
            "KMP_INIT_AT_FORK=FALSE",
        ),
    ],
)
def test_each_cpu_blas_failure_says_its_own_cause_and_steps(
    line: str, sig_id: str, cause: str, why_says: str, fix_says: str
) -> None:
    exp = explained(line)
    assert exp.root is not None and exp.root.sig.id == sig_id
    got = first(exp)
    assert got["id"] == cause
    assert why_says in str(got["why"])
    fixes = [str(f) for f in got["fix"]]  # type: ignore[attr-defined]
    assert any(fix_says in f for f in fixes)
    assert not any("KMP_DUPLICATE_LIB_OK" in f for f in fixes)  # not the duplicate-runtime stopgap


def test_a_thread_refused_with_eperm_is_the_container_policy_not_a_thread_limit() -> None:
    eagain = explained(
        "OpenBLAS blas_thread_init: pthread_create failed for thread 3 of 64: Resource temporarily unavailable\n"
    )
    eperm = explained(
        "OpenBLAS blas_thread_init: pthread_create failed for thread 3 of 64: Operation not permitted\n"
    )
    assert eagain.root is not None and eagain.root.sig.id == "cpu-blas-runtime/thread-creation-failed"
    assert eperm.root is not None and eperm.root.sig.id == "cpu-blas-runtime/thread-creation-not-permitted"
    assert [m.sig.id for m in eperm.matches] == ["cpu-blas-runtime/thread-creation-not-permitted"]
    assert "seccomp" not in str(first(eagain)["why"])


def test_other_intel_openmp_assertions_keep_the_general_reading() -> None:
    exp = explained("OMP: Error #13: Assertion failure at kmp_affinity.cpp(4314).\n")
    assert exp.root is not None and exp.root.sig.id == "cpu-blas-runtime/omp-error-15"


NUMPY_WINDOWS = """$ python -c "import numpy"
 ** On entry to DGEBAL parameter number  3 had an illegal value
 ** On entry to DHSEQR parameter number  4 had an illegal value
Traceback (most recent call last):
  File "C:\\Users\\Song\\AppData\\Roaming\\Python\\Python39\\site-packages\\numpy\\__init__.py", line 305, in <module>
    _win_os_check()
RuntimeError: The current Numpy installation ('C:\\\\Users\\\\Song\\\\numpy\\\\__init__.py') fails to pass a sanity check due to a bug in the windows runtime. See this issue for more information: https://tinyurl.com/y3dm3h86
"""  # numpy/numpy#17726


def test_numpys_windows_sanity_check_absorbs_the_lapack_lines_it_provoked() -> None:
    exp = explained(NUMPY_WINDOWS)
    assert exp.root is not None and exp.root.sig.id == "library-bug/numpy-windows-fmod-sanity-check"
    assert [m.sig.id for m in exp.matches] == ["library-bug/numpy-windows-fmod-sanity-check"]
    got = first(exp)
    assert got["id"] == "library-bug" and "numpy==1.19.3" in str(got["fix"])
    assert "shape-mismatch" not in [c.id for c in exp.causes]  # the argument numbers are not the user's


def test_the_lapack_lines_alone_still_read_as_a_bad_argument() -> None:
    exp = explained(" ** On entry to DGEBAL parameter number  3 had an illegal value\n")
    assert exp.root is not None and exp.root.sig.id == "library-bug/blas-illegal-parameter"


def _numpy_under(address_space_kib: int, stack_kib: int) -> str:
    """Import numpy for real, OpenBLAS asked for 64 threads, under these rlimits; its stderr."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space_kib * 1024,) * 2)
        resource.setrlimit(resource.RLIMIT_STACK, (stack_kib * 1024,) * 2)

    env = {"OPENBLAS_NUM_THREADS": "64", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", "import numpy"],
        preexec_fn=limit,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stderr


def _real_failure(marker: str, limits: list[tuple[int, int]]) -> str:
    for address_space, stack in limits:
        text = _numpy_under(address_space, stack)
        if marker in text:
            return text
    pytest.skip(f"numpy's OpenBLAS did not print {marker!r} under the limits tried on this machine")


def test_a_real_openblas_that_cannot_start_its_threads_is_explained() -> None:
    # 64 MiB thread stacks in a small address space: pthread_create fails with EAGAIN
    text = _real_failure("pthread_create failed", [(150_000, 65_536), (200_000, 65_536), (300_000, 131_072)])
    exp = explained(text)
    assert exp.root is not None and exp.root.sig.id == "cpu-blas-runtime/thread-creation-failed"
    assert first(exp)["id"] == "cpu-blas-runtime"


def test_a_real_openblas_that_cannot_allocate_its_buffers_is_explained() -> None:
    text = _real_failure(
        "Memory allocation still failed", [(80_000, 8_192), (100_000, 8_192), (120_000, 8_192)]
    )
    exp = explained(text)
    assert exp.root is not None and exp.root.sig.id == "host-oom/openblas-buffer-allocation-failed"
    got = first(exp)
    assert got["id"] == "host-oom" and "ulimit -v" in str(got["fix"])


def test_openblas_past_its_thread_count_is_harmless_until_the_regions_run_out() -> None:
    warning = (
        "OpenBLAS warning: precompiled NUM_THREADS exceeded, adding auxiliary array for thread metadata.\n"
    )
    alone = explained(warning)
    assert alone.root is None and list(alone.scan.benign) == ["openblas-num-threads-exceeded"]
    # rocker-org/rocker-versioned2#820: the warning, then the error that matters
    exp = explained(
        warning + "OpenBLAS : Program is Terminated. Because you tried to allocate too many memory regions.\n"
    )
    assert exp.root is not None and exp.root.sig.id == "cpu-blas-runtime/openblas-too-many-memory-regions"
