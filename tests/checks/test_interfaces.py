"""socket-ifname-unmatched: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME against the host's network
interfaces. The interface fact is read from this machine; Gloo's reading is checked against the
real torch of the test environment opening real Gloo process groups."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cudoctor.checks import interfaces
from cudoctor.facts import network
from cudoctor.model import Severity, Status, absent
from tests.conftest import run_check, stated

TORCH_CUDA = {"version": "2.5.1+cu124", "build": "cuda", "cuda": "12.4"}
TORCH_CPU = {"version": "2.5.1+cpu", "build": "cpu", "cuda": None}
CLOUD_VM = [
    {"name": "lo", "ipv4": True, "ipv6": True},
    {"name": "ens5", "ipv4": True, "ipv6": False},
    {"name": "docker0", "ipv4": True, "ipv6": False},
    {"name": "ib0", "ipv4": False, "ipv6": False},
]
# /proc/net/if_inet6 as this machine printed it (address, index, prefix length, scope, flags, name)
IF_INET6 = """fd000000000000000000000000000002 04 40 00 82     eth0
fe8000000000000000fc00fffe000001 04 40 20 80     eth0
00000000000000000000000000000001 01 80 10 80       lo
"""


def _findings(env: dict[str, str], torch: dict[str, Any] = TORCH_CUDA, ifaces: Any = CLOUD_VM) -> list[Any]:
    snap = stated({}, env=env, framework__torch=torch, host__net_interfaces=ifaces)
    return list(run_check("socket-ifname-unmatched", snap).findings)


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("NCCL_SOCKET_IFNAME", "eth0", "selects none of this host's interfaces"),
        ("NCCL_SOCKET_IFNAME", "=ens", "selects none"),  # = makes it an exact name
        ("NCCL_SOCKET_IFNAME", "ib", "selects only ib0, which carries no IP address"),
        ("NCCL_SOCKET_IFNAME", "^lo,docker,ens", "selects only ib0"),
        ("GLOO_SOCKET_IFNAME", "eth0", "there is no interface named eth0"),
        ("GLOO_SOCKET_IFNAME", "^lo,docker", "'^lo' is NCCL's syntax"),
        ("GLOO_SOCKET_IFNAME", "10.0.0.7", "is an IP address"),
        ("GLOO_SOCKET_IFNAME", "ens", "there is no interface named ens"),  # no prefixes in Gloo
        ("GLOO_SOCKET_IFNAME", "ens5,ib0", "ib0 has no IP address"),
        ("GLOO_SOCKET_IFNAME", " ens5", "has spaces around the name"),
    ],
)
def test_a_value_that_matches_no_usable_interface_fires(variable: str, value: str, says: str) -> None:
    [f] = _findings({variable: value})
    assert f.severity is Severity.ERROR and f.cause == "multi-gpu-comm"
    assert says in f.title
    assert "interfaces with an IP address: lo, ens5, docker0" in f.evidence
    assert f.fix[0].startswith(f"export {variable}=ens5")  # the one real link here


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("NCCL_SOCKET_IFNAME", "ens"),
        ("NCCL_SOCKET_IFNAME", "=ens5"),
        ("NCCL_SOCKET_IFNAME", "^lo,docker"),
        ("NCCL_SOCKET_IFNAME", "eth,ens"),
        ("NCCL_SOCKET_IFNAME", "ens5:1234"),
        ("GLOO_SOCKET_IFNAME", "ens5"),
        ("GLOO_SOCKET_IFNAME", "lo,ens5,"),  # torch drops the empty item
        ("GLOO_SOCKET_IFNAME", "x"),  # torch ignores a value of one character
        ("GLOO_SOCKET_IFNAME", ""),
    ],
)
def test_a_value_that_selects_a_usable_interface_stays_silent(variable: str, value: str) -> None:
    assert _findings({variable: value}) == []


def test_nccl_matters_only_with_a_cuda_build_and_gloo_with_any_torch() -> None:
    env = {"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"}
    assert [f.subject for f in _findings(env, TORCH_CPU)] == ["GLOO_SOCKET_IFNAME"]
    assert [f.subject for f in _findings(env)] == ["NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"]


def test_missing_facts_make_it_unknown_or_skip() -> None:
    env = {"GLOO_SOCKET_IFNAME": "eth0"}
    no_interfaces = stated({}, env=env, framework__torch=TORCH_CPU)
    assert run_check("socket-ifname-unmatched", no_interfaces).outcome == "unknown"
    not_linux = stated({}, env=env, framework__torch=TORCH_CPU)
    not_linux.add(absent("host.net_interfaces", "test", "read on Linux only"))
    assert run_check("socket-ifname-unmatched", not_linux).outcome == "skipped"


def test_ipv6_names_come_from_the_last_field() -> None:
    assert network.ipv6_names(IF_INET6) == {"eth0", "lo"}
    assert network.ipv6_names("") == set()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="interfaces are read on Linux")
def test_the_fact_reads_this_machines_interfaces() -> None:
    fact = network.interfaces()
    assert fact.status is Status.KNOWN
    names = {i["name"]: i for i in fact.value}
    assert names["lo"]["ipv4"] is True  # every Linux network namespace has a loopback
    assert all(set(i) == {"name", "ipv4", "ipv6"} for i in fact.value)  # no addresses kept


GLOO = """
import json, os, sys
import torch.distributed as dist
out = []
for port, value in enumerate(json.loads(sys.argv[1]), start=int(sys.argv[2])):
    os.environ["GLOO_SOCKET_IFNAME"] = value
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
        dist.destroy_process_group()
        out.append(False)
    except RuntimeError:
        out.append(True)
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="interfaces are read on Linux")
def test_the_gloo_reading_agrees_with_real_gloo_on_this_machine() -> None:
    pytest.importorskip("torch.distributed")
    ifaces = network.interfaces().value
    bare = [i["name"] for i in ifaces if not (i["ipv4"] or i["ipv6"])]
    values = [
        "doesnotexist",
        "^lo,docker",
        "lo,eth9",
        "10.0.0.1",
        "lo",
        "=lo",
        "l",
        "x",
        " lo",
        "lo,",
        *bare[:1],
    ]
    done = subprocess.run(
        [sys.executable, "-c", GLOO, json.dumps(values), "29611"], capture_output=True, text=True, timeout=300
    )
    real = json.loads(done.stdout.strip().splitlines()[-1])
    ours = [bool(interfaces.names_reasons(v, ifaces)) for v in values]
    assert dict(zip(values, ours, strict=True)) == dict(zip(values, real, strict=True))
    assert real[:4] == [True, True, True, True] and real[4] is False


# ------------------------------------------------------------------ explain
def _explain(line: str, ifaces: Any = None) -> Any:
    from cudoctor.explainer import rank, scan

    snap = stated({}) if ifaces is None else stated({}, host__net_interfaces=ifaces)
    return rank.explain(scan.scan(io.BytesIO(line.encode())), snap)


GLOO_ERROR = (
    "RuntimeError: [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:84] "
    "ifa != nullptr. Unable to find address for: {}"
)


def test_explain_says_why_gloo_could_not_use_the_name() -> None:
    syntax = _explain(GLOO_ERROR.format("^lo"))
    assert syntax.root.sig.id == "multi-gpu-comm/gloo-no-address-for-interface"
    assert syntax.causes[0].id == "multi-gpu-comm"
    assert syntax.causes[0].fixes[0].startswith("GLOO_SOCKET_IFNAME: '^lo' is NCCL's syntax")
    missing = _explain(GLOO_ERROR.format("eth0"), CLOUD_VM)
    assert missing.causes[0].fixes[0] == (
        "GLOO_SOCKET_IFNAME: there is no interface named eth0. Set it to an interface name "
        "(interfaces with an IP address here: lo, ens5, docker0), or unset it"
    )


def test_explain_without_the_hosts_interfaces_does_not_claim_one_is_missing() -> None:
    exp = _explain(GLOO_ERROR.format("eth0"))
    assert not any("there is no interface" in r for r in exp.causes[0].reasons)


def test_explain_reads_nccls_bootstrap_failure_as_the_interface_setting() -> None:
    exp = _explain("node1:123:123 [0] misc/socket.cc:484 NCCL WARN Bootstrap : no socket interface found")
    assert exp.root.sig.id == "multi-gpu-comm/nccl-no-socket-interface"
    assert "NCCL_SOCKET_IFNAME" in exp.causes[0].fixes[0]


# ------------------------------------------------------------------ NCCL_IB_HCA
def _ib(tmp_path: Path, *names: str) -> list[str]:
    """A /sys/class/infiniband made in a temporary directory, read by the real fact."""
    root = tmp_path / "infiniband"
    root.mkdir()
    for name in names:
        (root / name).mkdir()
    fact = network.ib_devices(str(root))
    assert fact.status is Status.KNOWN
    return list(fact.value)


def _ib_findings(value: str, devices: list[str]) -> list[Any]:
    snap = stated({}, env={"NCCL_IB_HCA": value}, framework__torch=TORCH_CUDA, host__ib_devices=devices)
    return list(run_check("ib-hca-unmatched", snap).findings)


def test_an_hca_list_that_selects_no_device_warns(tmp_path: Path) -> None:
    devices = _ib(tmp_path, "mlx5_0", "mlx5_1")
    assert devices == ["mlx5_0", "mlx5_1"]
    [f] = _ib_findings("mlx4_0:1", devices)
    assert f.severity is Severity.WARNING and "selects none of this host's RDMA devices" in f.title
    assert "over TCP sockets" in f.title and "RDMA devices: mlx5_0, mlx5_1" in f.evidence


def test_a_prefix_that_also_takes_other_hcas_is_noted(tmp_path: Path) -> None:
    devices = _ib(tmp_path, "mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11")
    [f] = _ib_findings("mlx5_1:1", devices)
    assert f.severity is Severity.INFO and "also selects mlx5_10, mlx5_11" in f.title
    assert f.fix[0].startswith("export NCCL_IB_HCA='=mlx5_1:1'")
    [listed] = _ib_findings("mlx5_0,mlx5_1", devices)
    assert "also selects mlx5_10, mlx5_11" in listed.title


@pytest.mark.parametrize("value", ["mlx5", "=mlx5_1", "^mlx5_0", "mlx5_0,mlx5_10", "mlx5_11:1"])
def test_an_hca_list_that_selects_what_it_names_stays_silent(value: str, tmp_path: Path) -> None:
    assert _ib_findings(value, _ib(tmp_path, "mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11")) == []


def test_without_rdma_devices_the_hca_check_is_skipped(tmp_path: Path) -> None:
    fact = network.ib_devices(str(tmp_path / "none"))
    assert fact.status is Status.ABSENT
    snap = stated({}, env={"NCCL_IB_HCA": "mlx5_0"}, framework__torch=TORCH_CUDA)
    snap.add(fact)
    assert run_check("ib-hca-unmatched", snap).outcome == "skipped"


TP_LOG = (
    "[W1122 09:03:29.258233816 tensorpipe_agent.cpp:170] Failed to look up the IP address for interface "
    "doesnotexist (no address found (this error originated at tensorpipe/transport/uv/utility.cc:50)), "
    "defaulting to 127.0.0.1"
)


@pytest.mark.parametrize(("value", "says"), [("eth0", "no interface named eth0"), ("lo,ens5", "is a list")])
def test_tensorpipe_takes_one_name_and_falls_back_to_loopback(value: str, says: str) -> None:
    [f] = _findings({"TP_SOCKET_IFNAME": value}, TORCH_CPU)
    assert f.severity is Severity.WARNING and says in f.title and "127.0.0.1" in f.title
    assert _findings({"TP_SOCKET_IFNAME": "ens5"}, TORCH_CPU) == []


def test_explain_reads_tensorpipes_loopback_fallback_as_the_interface_setting() -> None:
    exp = _explain(TP_LOG)
    assert exp.root.sig.id == "multi-gpu-comm/tensorpipe-interface-loopback"
    assert (
        exp.causes[0].id == "multi-gpu-comm"
        and "TP_SOCKET_IFNAME names 'doesnotexist'" in exp.causes[0].fixes[0]
    )
