"""torch.distributed's rendezvous: a TCP store that cannot be reached, a port another process holds,
nodes that never joined. The installed torch raises each of them for real here, on loopback only;
the other lines are from the threads each signature's source names."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from cudoctor.explainer import rank
from tests.conftest import explained, first, fixes, needs_torch, python_output
from tests.explainer.helpers import explain_text, top


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tcpstore_error(port: int, master: bool) -> str:
    """What the installed torch printed when a TCPStore on 127.0.0.1:`port` failed (client or master)."""
    code = (
        "import datetime; from torch.distributed import TCPStore\n"
        f"TCPStore('127.0.0.1', {port}, 2, {master}, timeout=datetime.timedelta(seconds=2))\n"
    )
    status, out = python_output(code, timeout=120)
    assert status != 0, out
    return out


@needs_torch
def test_a_store_nobody_listens_on_names_the_address_it_tried() -> None:
    port = free_port()
    out = tcpstore_error(port, master=False)
    assert "The client socket has timed out" in out
    exp = explained(out)
    assert exp.root is not None and exp.root.sig.id == "multi-gpu-comm/rendezvous-store-unreachable"
    assert first(exp)["id"] == "multi-gpu-comm"
    steps = fixes(exp)
    assert steps[0].startswith("On the master node") and f"grep {port}" in steps[0]
    assert f"nc -zv 127.0.0.1 {port}" in steps[1]
    assert not any("NCCL_P2P_DISABLE" in s for s in steps)  # the generic NCCL steps do not apply


@needs_torch
def test_a_port_another_process_holds_says_who_to_ask() -> None:
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = held.getsockname()[1]
        out = tcpstore_error(port, master=True)
    assert "EADDRINUSE" in out
    exp = explained(out)
    assert exp.root is not None and exp.root.sig.id == "multi-gpu-comm/rendezvous-port-in-use"
    assert f"listen on port {port}" in str(first(exp)["why"])
    steps = fixes(exp)
    assert steps[0].startswith(f"See who holds the port: ss -ltnp | grep :{port}")
    assert "--rdzv-endpoint=localhost:0" in steps[1]


@needs_torch
def test_nodes_that_never_joined_send_the_reader_to_their_logs() -> None:
    """torchrun with --nnodes=2 and one node: its agent hosts the store and waits out join_timeout."""
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    if not os.path.exists(torchrun):
        pytest.skip("torchrun is not installed beside this Python")
    done = subprocess.run(
        [
            torchrun,
            "--nnodes=2",
            "--nproc_per_node=1",
            "--rdzv_backend=c10d",
            f"--rdzv_endpoint=127.0.0.1:{free_port()}",
            "--rdzv_conf=read_timeout=3,join_timeout=3",
            "-m",
            "this",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "RendezvousTimeoutError" in done.stderr
    exp = explained(done.stderr)
    assert exp.root is not None and exp.root.sig.id == "multi-gpu-comm/rendezvous-timeout"
    assert fixes(exp)[0].startswith("Read the other nodes' logs first")


@pytest.mark.parametrize(
    ("log", "host", "port"),
    [
        (  # hiyouga/LlamaFactory#3715: the example's master address
            "[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:255.255.0.0]:29500 "
            "(errno: 110 - Connection timed out).\n",
            "::ffff:255.255.0.0",
            "29500",
        ),
        (  # hpcaitech/ColossalAI#4009: a host name
            "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to "
            "(GPU03, 29500).\n",
            "GPU03",
            "29500",
        ),
        (  # pytorch/pytorch#107021: the address without parentheses
            "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to "
            "192.0.0.1:1234\n"
            "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d "
            "store has failed. See inner exception for details.\n",
            "192.0.0.1",
            "1234",
        ),
    ],
)
def test_every_wording_of_an_unreachable_store_gives_its_host_and_port(
    log: str, host: str, port: str
) -> None:
    exp = explained(log)
    assert exp.root is not None and exp.root.line == 1
    assert f"getent hosts {host}; nc -zv {host} {port}" in fixes(exp)[1]


def test_the_ipv6_fallback_warning_alone_is_not_a_rendezvous_failure() -> None:
    """torch warns when it cannot open an IPv6 socket and then connects over IPv4."""
    exp = explained(
        "[W socket.cpp:697] [c10d] The client socket cannot be initialized to connect to [localhost]:29500 "
        "(errno: 97 - Address family not supported by protocol).\n"
    )
    assert exp.root is None or exp.root.sig.id != "multi-gpu-comm/rendezvous-store-unreachable"


def test_the_port_a_launch_script_holds_is_named_from_the_bind_warnings() -> None:
    """open-mmlab/mmpretrain#960: only the warnings carry the port (22, sshd's)."""
    exp = explained(
        "[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:22 (errno: 98 - Address already in use).\n"
        "[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:22 (errno: 98 - Address already "
        "in use).\n"
        "[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network address.\n"
    )
    assert first(exp)["id"] == "multi-gpu-comm" and "port 22," in str(first(exp)["why"])
    assert any("PORT variable read by dist_train.sh" in s for s in fixes(exp))


@needs_torch
def test_a_script_started_without_a_launcher_is_told_to_use_one() -> None:
    code = (
        "import os\n"
        "for k in ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'LOCAL_RANK'): os.environ.pop(k, None)\n"
        "import torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
    )
    status, out = python_output(code, timeout=120)
    assert status != 0 and "expected, but not set" in out
    exp = explained(out)
    assert exp.root is not None and exp.root.sig.id == "multi-gpu-comm/env-rendezvous-variable-unset"
    assert fixes(exp)[0].startswith("Start it with a launcher: torchrun --nproc_per_node=")


def test_an_8bit_model_trained_on_another_device_loads_on_each_ranks_gpu() -> None:
    """axolotl-ai-cloud/axolotl#148: a device map on cuda:0 in every rank."""
    exp = explained(
        "ValueError: You can't train a model that has been loaded in 8-bit precision on a different device than "
        "the one you're training on.\n"
    )
    assert [c.id for c in exp.causes[:2]] == ["device-mismatch", "library-bug"]
    assert "device_map={'': torch.cuda.current_device()}" in fixes(exp)[0]


def test_two_ranks_on_one_gpu_start_one_process_per_gpu() -> None:
    """facebookresearch/ViewDiff#24: four processes on a one-GPU machine."""
    exp = explained(
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
        "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3\n"
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
        "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1000\n"
    )
    assert exp.root is not None and exp.root.sig.id == "multi-gpu-comm/nccl-duplicate-gpu"
    assert "ranks 0 and 1 on the same GPU (PCI bus 1000)" in str(first(exp)["why"])
    assert fixes(exp)[0].startswith("Start one process per GPU")


def test_nccls_shared_memory_segment_is_the_containers_dev_shm() -> None:
    """NVIDIA/nccl#342: Docker's 64 MB /dev/shm."""
    exp = explained(
        "include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device\n"
        "include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-0-1-3 (size 9637888)\n"
    )
    assert [c.id for c in exp.causes[:2]] == [
        "multi-gpu-comm",
        "shm-exhausted",
    ]  # the taxonomy files NCCL transports first
    steps = fixes(exp)
    assert steps[0].startswith("Give the container a larger /dev/shm: docker run --shm-size=16g")
    assert any("NCCL_SHM_DISABLE=1" in s for s in steps) and not any("NCCL_P2P_DISABLE" in s for s in steps)


def test_a_dev_shm_this_user_cannot_write_is_the_same_transport() -> None:
    """NVIDIA/nccl#328: chmod on /dev/shm fixed it."""
    exp = explained(
        "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied\n"
    )
    assert exp.root is not None and exp.root.sig.id == "multi-gpu-comm/nccl-shared-memory-segment"
    assert any("mode 1777" in s for s in fixes(exp))


def test_nccl_out_of_gpu_memory_is_memory_not_the_network() -> None:
    exp = explained("node1:1234:1300 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'\n")
    assert [c.id for c in exp.causes[:2]] == ["gpu-oom", "multi-gpu-comm"]


def test_tensorflow_without_nccl_is_given_an_all_reduce_that_needs_none() -> None:
    """tensorflow/tensorflow#44281: MirroredStrategy on native Windows; HierarchicalCopyAllReduce fixed it."""
    log = (
        "No OpKernel was registered to support Op 'NcclAllReduce' used by {{node NcclAllReduce}} with these attrs: "
        '[reduction="sum", shared_name="c1", T=DT_FLOAT, num_devices=2]\n'
        "Registered devices: [CPU, GPU, XLA_CPU, XLA_GPU]\nRegistered kernels:\n  <no registered kernels>\n"
    )
    exp = explain_text(log, {"os": "Windows", "framework_version": "tensorflow 2.3"})
    assert top(exp)[0] == "multi-gpu-comm"
    fix = rank.cause_json(exp.causes, 0, plan=exp.plan)["fix"]
    assert "HierarchicalCopyAllReduce" in fix[0] and not any("torch" in s for s in fix)
    other = explain_text(
        "No OpKernel was registered to support Op 'CudnnRNN' used by {{node cu_dnngru/CudnnRNN}}\n"
    )
    assert other.root is None or other.root.sig.id != "multi-gpu-comm/tf-nccl-op-missing"


def test_ncclS_missing_infiniband_library_is_harmless_and_the_cuda_failure_it_quotes_is_the_root() -> None:
    """NVIDIA/nccl#444: NCCL 2.7.8 without kernels for a K40m (sm_35): 'Cuda failure invalid device function' after
    each rank's harmless 'Failed to open libibverbs.so'."""
    log = (
        "[0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        "NCCL version 2.7.8+cuda11.0\n"
        "[1] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        "[0] enqueue.cc:215 NCCL WARN Cuda failure 'invalid device function'\n"
    )
    exp = explain_text(log)
    assert exp.root is not None and "invalid device function" in exp.root.text
    assert top(exp)[0] == "arch-unsupported"
    only = explain_text("[0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n")
    assert only.root is None and "nccl-libibverbs-absent" in only.scan.benign
