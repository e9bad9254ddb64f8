"""The fix planner: steps computed from facts, steps that contradict a fact dropped, and what it does
when a fact is unknown."""

from __future__ import annotations

import dataclasses

from cudoctor.explainer.command import explain_stated
from cudoctor.facts.stated import from_stated
from cudoctor.fixes import checked, planner, steps
from cudoctor.model import Snapshot

CU126 = "PyTorch: pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126"


def ctx(**facts: str) -> planner.Context:
    return planner.context(from_stated(facts))


def test_the_context_reads_the_stated_facts() -> None:
    c = ctx(
        driver="452.39", framework_version="torch 2.1.0+cu121", gpu="Tesla T4", os="Windows 11"
    )  # Windows numbering
    assert (c.framework, c.cuda, c.driver_cuda, c.cc, c.platform) == (
        "torch",
        "12.1",
        "11.0",
        (7, 5),
        "windows",
    )
    assert planner.context(Snapshot(origin="none")) == planner.Context()


def test_a_wheel_index_the_driver_cannot_run_is_dropped() -> None:
    old = ctx(driver="450.80.02", framework_version="torch 2.1.0+cu121")
    assert planner.contradicts(CU126, old)
    new = ctx(driver="535.104.05", framework_version="torch 2.1.0+cu121")  # CUDA 12.2: cu126 by minor compat
    assert not planner.contradicts(CU126, new)
    assert not planner.contradicts(CU126, planner.Context(framework="torch"))  # driver unknown: kept


def test_a_wheel_index_whose_builds_lack_the_gpu_is_dropped() -> None:
    blackwell = ctx(gpu="NVIDIA GeForce RTX 5080", framework_version="torch 2.3.1+cu121")
    assert planner.contradicts(
        "pip install torch --index-url https://download.pytorch.org/whl/cu121", blackwell
    )
    assert not planner.contradicts(
        "pip install torch --index-url https://download.pytorch.org/whl/cu128", blackwell
    )


def test_nvidia_wheels_of_another_cuda_major_and_other_frameworks_are_dropped() -> None:
    tf = ctx(framework_version="tensorflow 2.10.0", system_cuda="11.2")
    assert tf.cuda_major == 11
    assert planner.contradicts("pip install nvidia-cudnn-cu12 (or -cu13)", tf)
    assert not planner.contradicts("pip install 'nvidia-cudnn-cu11==8.*'", tf)
    assert planner.contradicts(CU126, tf)  # a PyTorch step for a TensorFlow log
    assert not planner.contradicts("pip install nvidia-cudnn-cu12", planner.Context())  # CUDA unknown


def test_jax_extras_need_a_driver_that_runs_their_cuda() -> None:
    old = ctx(driver="470.82.01", framework_version="jaxlib 0.4.20+cuda12.cudnn89")
    assert planner.contradicts("pip install -U 'jax[cuda12]'", old)
    assert not planner.contradicts("pip install -U 'jax[cuda12]' after you upgrade the driver", old)
    assert not planner.contradicts("pip install -U 'jax[cuda12]'", ctx(driver="535.104.05"))


def test_a_jax_extra_of_another_cuda_major_than_the_build_is_dropped_unless_the_driver_is_why() -> None:
    cuda11 = ctx(framework_version="jaxlib 0.4.6+cuda11.cudnn86")
    assert cuda11.framework == "jax" and cuda11.cuda_major == 11
    assert planner.contradicts('JAX: pip install -U "jax[cuda12]" in a fresh environment', cuda11)
    assert not planner.contradicts("pip install -U 'jax[cuda11_pip]'", cuda11)
    assert not planner.contradicts(
        "Or upgrade the NVIDIA driver to 525.60.13, then pip install -U 'jax[cuda12]'", cuda11
    )
    assert not planner.contradicts(
        "pip install -U 'jax[cuda12]'", ctx(framework_version="jax 0.4.30")
    )  # build unknown


def test_tensorflow_gpu_installs_on_native_windows_and_other_gpus_archs_are_dropped() -> None:
    win = ctx(os="Windows 10", framework_version="tensorflow 2.13.0")
    assert planner.contradicts("pip install 'tensorflow[and-cuda]'", win)
    assert not planner.contradicts("In WSL2: pip install 'tensorflow[and-cuda]'", win)
    ampere = ctx(gpu="RTX 3090")
    assert planner.contradicts(
        "rebuild with TORCH_CUDA_ARCH_LIST set (e.g. TORCH_CUDA_ARCH_LIST=8.0)", ampere
    )
    assert not planner.contradicts("rebuild with TORCH_CUDA_ARCH_LIST=8.6", ampere)
    assert planner.contradicts("install the last variant (e.g. PyTorch cu126 keeps sm_50..sm_70)", ampere)
    assert not planner.contradicts(
        "install the last variant (PyTorch cu126 keeps sm_50..sm_70)", ctx(gpu="GTX 1080")
    )


def test_driver_too_old_pins_the_newest_torch_the_driver_runs() -> None:
    c = ctx(driver="450.80.02", framework_version="torch 2.1.0+cu121", gpu="Tesla T4")
    planned = planner.plan(
        "driver-too-old", ["pip install torch --index-url https://download.pytorch.org/whl/cu118"], c
    )
    # first the least change (the release installed, in a variant the driver runs), then the newest
    assert planned[0].startswith(
        "pip install --force-reinstall 'torch==2.1.0' --index-url https://download.pytorch.org/whl/cu118"
    )
    assert planned[1].startswith(
        "Or pip install --force-reinstall 'torch==2.7.*' --index-url https://download.pytorch.org/whl/cu118"
    )
    assert any("525.60.13" in s for s in planned)
    assert len([s for s in planned if "whl/cu118" in s]) == 2  # the pinned steps replaced the unpinned one
    assert not any(s.startswith("pip install torch --index-url") for s in planned)


def test_unknown_facts_are_named_with_the_command_that_shows_them() -> None:
    out = planner.plan("arch-unsupported", ["rebuild for the GPU"], planner.Context(framework="torch"))
    assert out[0] == "rebuild for the GPU" and out[-1].startswith(steps.FIND_OUT)
    unknown_driver = steps.cpu_only_build(planner.Context(framework="torch"))
    assert "nvidia-smi" in unknown_driver[0]


def test_toolchain_steps_follow_the_builds_own_cuda() -> None:
    old = steps.toolchain_not_found(ctx(framework_version="tensorflow-gpu 2.3.0", system_cuda="10.1"))
    assert "cuda-10.1" in old[0] and "nvidia-cuda-nvcc" not in old[0]
    new = steps.toolchain_not_found(ctx(framework_version="tensorflow 2.15.0"))
    assert "nvidia-cuda-nvcc-cu12" in new[0]


def test_placeholders_meant_for_a_finding_are_dropped_where_no_finding_shows() -> None:
    step = "Install a build whose architecture list includes the GPU (see the arch list in the finding)"
    assert planner.plan("library-bug", [step], planner.Context(), beside_finding=False) == []
    assert planner.plan("library-bug", [step], planner.Context()) == [step]


def test_checks_findings_go_through_the_planner() -> None:
    snap = from_stated({"driver": "450.80.02", "framework_version": "torch 2.1.0+cu121", "gpu": "Tesla T4"})
    found = [f for r in checked(snap) for f in r.findings if f.id == "driver-too-old"]
    assert found and "torch==2.1.0" in found[0].fix[0] and "torch==2.7.*" in found[0].fix[1]


def test_an_unpinned_cudnn_wheel_is_dropped_where_the_build_wants_cudnn_8() -> None:
    wants_8 = planner.Context(cudnn_wanted=8)
    assert planner.contradicts("pip install nvidia-cudnn-cu12", wants_8)
    assert not planner.contradicts("pip install 'nvidia-cudnn-cu12==8.*'", wants_8)
    assert not planner.contradicts("pip install nvidia-cudnn-cu12", planner.Context(cudnn_wanted=9))
    read = planner.context(
        Snapshot(origin="none"), None, {"library": "cudnn", "compiled": "8.5.0", "loaded": "9.1.0"}
    )
    assert read.cudnn_wanted == 8


def test_a_driver_upgrade_the_driver_already_meets_is_dropped() -> None:
    step = "Or upgrade the NVIDIA driver to 525.60.13 or newer"
    assert planner.contradicts(step, planner.Context(driver="525.125.06"))
    assert not planner.contradicts(step, planner.Context(driver="470.82.01"))
    assert not planner.contradicts(step, planner.Context())


def test_steps_read_as_a_person_runs_them() -> None:
    windows = planner.Context(platform="windows")
    assert planner.plan("library-bug", ["export CUDA_LAUNCH_BLOCKING=1"], windows) == [
        'set CUDA_LAUNCH_BLOCKING=1 (PowerShell: $env:CUDA_LAUNCH_BLOCKING="1")'
    ]
    assert planner.plan("library-bug", ["Or upgrade the driver"], planner.Context()) == ["Upgrade the driver"]


def test_a_ptxas_the_log_calls_too_old_is_replaced_by_the_newest_of_its_major() -> None:
    too_old = planner.Context(
        framework="jax",
        system_cuda="11.8",
        root="ptxas fatal : Unsupported .version 8.0; current version is '7.8'",
    )
    assert steps.toolchain_not_found(too_old) == [
        "pip install -U nvidia-cuda-nvcc-cu11  (the newest ptxas of CUDA 11: the one found is older than the code it compiles)"
    ]


def test_with_the_driver_unknown_an_older_cuda_build_is_offered_beside_the_newest() -> None:
    c = planner.Context(framework="torch", version="2.6.0", cc=(12, 0))
    out = steps.arch_unsupported(c)
    assert "whl/cu130" in out[0] and "nvidia-smi" in out[0]
    assert any(
        s.startswith("Or, if nvidia-smi shows a driver too old for CUDA 13.0") and "whl/cu128" in s
        for s in out
    )
    known_driver = steps.arch_unsupported(
        planner.Context(framework="torch", version="2.6.0", cc=(12, 0), driver_cuda="12.8")
    )
    assert not any("driver too old" in s for s in known_driver) and "whl/cu128" in known_driver[0]


def test_releases_before_1_13_install_from_the_stable_page_with_their_local_version() -> None:
    c = planner.Context(framework="torch", version="1.10.1", cc=(8, 0))
    out = steps.arch_unsupported(c)
    assert out[0].startswith(
        "pip install --force-reinstall 'torch==1.10.1+cu111' -f https://download.pytorch.org/whl/torch_stable.html"
    )


def test_a_build_with_only_ptx_for_the_gpu_is_not_offered_as_holding_it() -> None:
    # PyTorch 1.4.0's CUDA 9.2 wheel carries PTX an Ampere GPU could JIT, but its cuBLAS and cuDNN
    # have no Ampere kernels: an RTX 3090 needs a build whose CUDA knows compute capability 8.6
    c = planner.Context(framework="torch", version="1.4.0", cc=(8, 6))
    out = steps.arch_unsupported(c)
    assert not any("cu92" in s or "cu101" in s for s in out), out
    assert "whl/cu1" in out[0]
    assert steps.same_release_variant(c) is None
    ampere = ctx(gpu="RTX 3090", framework_version="torch 1.4.0")
    assert planner.contradicts(
        "pip install --force-reinstall 'torch==1.4.0+cu92' -f https://download.pytorch.org/whl/torch_stable.html",
        ampere,
    )


def test_cupy_jax_and_tensorflow_arch_steps_come_from_their_tables() -> None:
    cupy = steps.arch_unsupported(planner.Context(framework="cupy", cc=(12, 0)))
    assert cupy[0].startswith("pip install 'cupy-cuda12x[ctk]'") and "12.8" in cupy[0]
    jax = steps.arch_unsupported(planner.Context(framework="jax", cc=(8, 6)))
    assert "jax[cuda11_pip]" in jax[0] and "11.1" in jax[0]
    tf = steps.arch_unsupported(planner.Context(framework="tensorflow", version="2.3.0", cc=(8, 6)))
    assert "tensorflow==2.4.*" in tf[0] and tf[1].startswith("Or pip install 'tensorflow[and-cuda]==")
    tf1 = steps.arch_unsupported(planner.Context(framework="tensorflow", version="1.14.0", cc=(8, 6)))
    assert any("nvidia-tensorflow" in s for s in tf1)
    old_gpu = steps.arch_unsupported(planner.Context(framework="tensorflow", version="1.14.0", cc=(7, 5)))
    assert not any("nvidia-tensorflow" in s for s in old_gpu)


def test_a_tensorflow_missing_its_cuda_libraries_gets_its_pair_or_the_release_for_the_cuda_there() -> None:
    out = steps.cuda_libs_missing(
        planner.Context(framework="tensorflow", version="2.4.0", system_cuda="11.1")
    )
    assert out[0].startswith("conda install -c conda-forge cudatoolkit=11.0 cudnn=8.0")
    assert "tensorflow==2.5.*" in out[1]
    assert steps.cuda_libs_missing(planner.Context(framework="torch", version="2.4.0")) == []


def test_jax_on_an_old_driver_gets_its_cuda_11_install_and_the_driver_for_cuda_12() -> None:
    out = steps.cpu_only_build(planner.Context(framework="jax", driver_cuda="11.7"))
    assert "jax[cuda11_pip]" in out[0] and "525.60.13" in out[1] and "jax[cuda12]" in out[1]
    assert planner.contradicts(
        "JAX: pip install -U 'jax[cuda12]' (or jax[cuda13] with a driver >= 580)",
        planner.Context(framework="jax", driver_cuda="11.7"),
    )


def test_steps_that_contradict_python_tensorflow_or_the_gpu_are_dropped() -> None:
    py311 = planner.Context(framework="tensorflow", python="3.11", platform="windows")
    assert planner.contradicts('python -m pip install "tensorflow<2.11"', py311)
    assert not planner.contradicts(
        'python -m pip install "tensorflow<2.11"',
        planner.Context(framework="tensorflow", python="3.10", platform="windows"),
    )
    assert planner.contradicts("it needs Python 3.7-3.10: pip install x", planner.Context(python="3.12"))
    tf24 = planner.Context(framework="tensorflow", version="2.4.0")
    assert planner.contradicts(
        "Install the libraries as pip wheels next to the framework: pip install 'tensorflow[and-cuda]'", tf24
    )
    assert not planner.contradicts("Use WSL2: python3 -m pip install 'tensorflow[and-cuda]'", tf24)
    ampere = planner.Context(cc=(8, 6))
    assert planner.contradicts("conda install -c conda-forge cudatoolkit=10.0 cudnn=7.4", ampere)
    assert not planner.contradicts("conda install -c conda-forge cudatoolkit=11.2 cudnn=8.1", ampere)


def test_a_step_of_alternatives_keeps_the_failing_frameworks() -> None:
    step = "Install the libraries as pip wheels next to the framework: pip install 'tensorflow[and-cuda]' / the torch wheel for your CUDA / pip install -U 'jax[cuda12]'"
    from cudoctor.fixes import scope

    assert (
        scope.trim(step, "jax")
        == "Install the libraries as pip wheels next to the framework: pip install -U 'jax[cuda12]'"
    )
    assert scope.trim(step, "paddle") is None
    assert scope.trim(step, None) == step


def test_a_computed_command_replaces_the_sentence_that_says_it_in_words() -> None:
    c = planner.Context(framework="cupy", cc=(12, 0))
    out = planner.plan(
        "arch-unsupported", ["Install a CuPy build made with a CUDA that supports compute capability 12.0"], c
    )
    assert out[0].startswith("pip install 'cupy-cuda12x[ctk]'") and len(out) == 1
    tf = planner.plan(
        "arch-unsupported",
        ["pip install --upgrade 'tensorflow[and-cuda]'  (or build TensorFlow from source for this GPU)"],
        planner.Context(framework="tensorflow", version="2.3.0", cc=(8, 6)),
    )
    assert "tensorflow==2.4.*" in tf[0] and not any("--upgrade" in s for s in tf)


def test_a_library_built_per_cuda_major_gets_the_release_line_the_driver_runs() -> None:
    out = steps.driver_too_old(planner.Context(framework="ctranslate2", driver_cuda="11.4"))
    assert out[0].startswith("pip install 'ctranslate2<4'") and "525.60.13" in out[1]
    assert (
        steps.driver_too_old(planner.Context(framework="ctranslate2")) == []
    )  # driver unknown: no line chosen


def test_a_missing_library_of_another_component_is_offered_as_nvidia_s_wheel() -> None:
    c = planner.Context(framework="ctranslate2", library_wheel="nvidia-cublas-cu12", soname="libcublas.so.12")
    assert (
        steps.cuda_libs_missing(c)[0].startswith("pip install nvidia-cublas-cu12")
        and "nvidia/cublas/lib" in steps.cuda_libs_missing(c)[0]
    )
    assert planner.contradicts("pip install nvidia-cublas-cu12", planner.Context(driver_cuda="11.4"))
    assert not planner.contradicts("pip install nvidia-cublas-cu12", planner.Context(driver_cuda="12.2"))
    cupy = steps.cuda_libs_missing(planner.Context(framework="cupy", cuda="11.0", system_cuda="12"))
    assert cupy[0] == (
        "pip uninstall -y cupy-cuda11x && pip install cupy-cuda12x  (CuPy wheels are made per CUDA release: "
        "cupy-cuda11x loads CUDA 11 libraries, and this machine's toolkit is CUDA 12, which cupy-cuda12x is "
        "built for)"
    )
    old = steps.cuda_libs_missing(planner.Context(framework="cupy", cuda="9.2", system_cuda="10.0"))
    assert old[0].startswith("pip uninstall -y cupy-cuda92 && pip install cupy-cuda100")


def test_a_cudnn_the_log_names_as_compiled_is_the_one_to_install() -> None:
    c = planner.context(
        Snapshot(origin="none"), "tensorflow", {"library": "cudnn", "compiled": "8.6.0", "loaded": "8.5.0"}
    )
    out = steps.cudnn_mismatch(c)
    assert "cudnn>=8.6,<9" in out[0] and not any(planner.contradicts(s, c) for s in out)


def test_a_container_image_asking_for_a_newer_cuda_names_that_cuda_s_driver() -> None:
    from cudoctor.explainer.readers import read_line

    line = "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a newer version, or use an earlier cuda container: unknown."
    reading = read_line(line)[0]
    assert reading.facts["driver_needed"] == "550.54.14" and "driver-too-old" in reading.causes
    c = planner.context(Snapshot(origin="none"), None, reading.facts)
    assert steps.driver_too_old(c)[0].startswith("Or upgrade the NVIDIA driver to 550.54.14")


def test_an_image_nvidia_container_cli_refuses_is_fixed_on_the_host_not_inside_it() -> None:
    """anibali/docker-pytorch#19: 'unsatisfied condition: cuda>=10.0' for a PyTorch image: the host's driver
    (410.48, CUDA 10.0's) or an older tag of the image, never a torch wheel installed into it."""
    log = (
        "docker: Error response from daemon: OCI runtime create failed: container_linux.go:346: starting container "
        'process caused "process_linux.go:449: container init caused \\"process_linux.go:432: running prestart hook 0 '
        'caused \\\\\\"error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: requirement error: '
        'unsatisfied condition: cuda>=10.0\\\\\\\\n\\\\\\"\\"": unknown.\n'
        "ERRO[0000] error waiting for container: context canceled\n"
    )
    doc = explain_stated(log, {"container": "anibali/pytorch:cuda-10.0"})
    assert doc["root"]["text"].startswith("docker: Error response from daemon")  # not docker's ERRO echo
    first = doc["causes"][0]
    assert first["id"] == "driver-too-old"
    assert (
        first["fix"][0].startswith("Upgrade the NVIDIA driver to 410.48") and "on the host" in first["fix"][0]
    )
    assert not any("pip install" in s for c in doc["causes"] for s in c["fix"])


def test_an_image_refused_on_its_tesla_alternative_names_the_cuda_it_requires_not_the_stated_one() -> None:
    """nvidia-container-cli reports the last alternative it tried (brand = tesla) when a GeForce driver is
    too old for the image's CUDA; the CUDA the image requires, not the stated framework's, is the one."""
    from cudoctor.explainer.readers import read_line

    line = (
        "exec command: [/usr/bin/nvidia-container-cli --load-kmods configure --ldconfig=@/sbin/ldconfig.real "
        "--device=all --compute --utility --require=cuda>=10.0 brand=tesla,driver>=384,driver<385 --pid=6970 "
        "/var/lib/docker/overlay2/be70/merged]\\\\nnvidia-container-cli: requirement error: unsatisfied condition: brand = tesla"
    )
    (reading,) = [r for r in read_line(line) if r.reader == "compiled-vs-loaded"]
    assert reading.facts["cuda_wanted"] == "10.0" and reading.facts["driver_needed"] == "410.48"
    c = planner.context(from_stated({"framework_version": "tensorflow-gpu 1.12"}), None, reading.facts)
    assert steps.driver_too_old(c)[0].endswith("(the CUDA 10.0 the log asks for)")
    assert read_line("nvidia-container-cli: requirement error: unsatisfied condition: brand = tesla") == []


def test_a_broken_install_is_reinstalled_as_the_same_build_from_its_own_index() -> None:
    """Issue 45, point 4: '+cpu' and '+cu121' builds are not on PyPI; the variant's index is."""
    cpu = planner.Context(framework="torch", version="2.13.0+cpu")
    assert steps.broken_install(cpu) == [
        "pip install --force-reinstall --no-deps 'torch==2.13.0' --index-url https://download.pytorch.org/whl/cpu"
    ]
    old = planner.Context(framework="torch", version="1.7.1+cu101")
    assert (
        "'torch==1.7.1+cu101' -f https://download.pytorch.org/whl/torch_stable.html"
        in steps.broken_install(old)[0]
    )
    jax = planner.Context(framework="jax", version="0.4.30")
    assert steps.broken_install(jax) == ["pip install --force-reinstall --no-deps 'jaxlib==0.4.30'"]
    assert steps.broken_install(planner.Context()) == []
    wheel = planner.Context(framework="cupy", version="13.3.0", dist="cupy-cuda12x")
    assert steps.broken_install(wheel) == ["pip install --force-reinstall --no-deps 'cupy-cuda12x==13.3.0'"]
    unknown = steps.broken_install(planner.Context(framework="cupy"))[0]  # PyPI's 'cupy' compiles from source
    assert "cupy-cuda12x" in unknown and "install --force-reinstall --no-deps cupy " not in unknown


def test_a_broken_copy_on_pythonpath_is_named_first_and_the_template_goes_last() -> None:
    ctx = planner.Context(framework="torch", version="2.1.0+cu121", pythonpath_copy="/opt/old")
    template = "Reinstall the package cleanly: pip install --force-reinstall --no-deps <package>==<version>"
    out = planner.plan("broken-install", [template], ctx)
    assert out[0].startswith("Take /opt/old out of PYTHONPATH")
    assert (
        "'torch==2.1.0' --index-url https://download.pytorch.org/whl/cu121" in out[1]
        and "--target /opt/old" in out[1]
    )
    assert template not in out  # the same command, made concrete


def test_the_driver_cuda_the_log_states_decides_the_torch_wheel() -> None:
    """'The NVIDIA driver on your system is too old (found version 11040)': a CUDA 11.4 driver."""
    log_facts = {"library": "driver", "older": "driver", "loaded": "11.4"}
    c = planner.context(from_stated({"framework_version": "torch (latest wheel)"}), "torch", log_facts)
    assert c.driver_cuda == "11.4"
    plan = planner.plan("driver-too-old", [], c)
    assert "whl/cu118" in plan[0] and not any("whl/cu12" in s or "whl/cu13" in s for s in plan)
    live = planner.context(from_stated({"driver": "535.104.05"}), "torch", log_facts)
    assert live.driver_cuda == "12.2"  # a driver the facts know wins over the log's words


def test_a_cuda_10_library_is_the_toolkit_of_that_cuda_not_a_wheel() -> None:
    """libcublas.so.8.0 and cudart64_90.dll carry their CUDA; no NVIDIA wheel holds CUDA 10.2 or older."""
    linux = planner.Context(framework="tensorflow", library_cuda="8.0", soname="libcublas.so.8.0")
    (step,) = steps.cuda_libs_missing(linux)
    assert step.startswith("Install CUDA 8.0") and "libcublas.so.8.0" in step and "LD_LIBRARY_PATH" in step
    windows = planner.Context(framework="tensorflow", cuda="10.0", platform="windows")
    assert "v10.0\\bin) on PATH" in steps.cuda_libs_missing(windows)[0]
    assert not any("Install CUDA" in s for s in steps.cuda_libs_missing(planner.Context(library_cuda="11.8")))
    assert (
        steps.cuda_libs_missing(planner.Context(framework="tensorflow", cuda="10")) == []
    )  # 10.0? 10.1? unknown


def test_jax_packages_are_pinned_to_jaxs_own_release() -> None:
    c = ctx(framework_version="jax: 0.4.35, jaxlib: 0.4.35")
    (step,) = steps.requirements_unmet(c)
    assert step.startswith("pip install -U 'jax[cuda12]==0.4.35'")
    assert steps.requirements_unmet(ctx(framework_version="torch 2.1.0+cu121")) == []


def test_tensorflow_and_cuda_next_to_a_cuda_10_build_is_dropped() -> None:
    step = "Install the libraries as pip wheels next to the framework: pip install 'tensorflow[and-cuda]'"
    assert planner.contradicts(step, planner.Context(framework="tensorflow", cuda="10.0"))
    assert not planner.contradicts(step, planner.Context(framework="tensorflow", cuda="12.3"))
    assert not planner.contradicts(step, planner.Context(framework="tensorflow"))


def test_a_library_older_than_the_symbol_it_lacks_gets_nvidias_wheel_of_that_release() -> None:
    c = planner.Context(
        framework="torch",
        soname="libnvJitLink.so.12",
        symbol_cuda="12.8",
        library_wheel="nvidia-nvjitlink-cu12",
    )
    for cause in ("multiple-toolkits", "requirements-unmet", "env-path-misconfig"):
        assert steps.for_cause(cause, c)[0].startswith("pip install -U 'nvidia-nvjitlink-cu12>=12.8'")
    assert steps.for_cause("multiple-toolkits", planner.Context(framework="torch")) == []


def test_a_ptxas_the_log_says_is_older_than_a_release_gets_that_release_of_its_major() -> None:
    root = "W asm_compiler.cc:111] *** WARNING *** You are using ptxas 11.0.221, which is older than 11.1."
    c = planner.context(Snapshot(origin="none"), framework="jax", root=root)
    assert c.cuda == "11.1"
    assert steps.toolchain_not_found(c)[0].startswith(
        "pip install -U nvidia-cuda-nvcc-cu11  (a ptxas of CUDA 11.1"
    )
    assert planner.contradicts("pip install nvidia-cuda-nvcc-cu12", c)


def test_cupy_and_nvcc_programs_get_the_driver_of_the_toolkit_installed() -> None:
    cupy = ctx(framework_version="CuPy==2.2.0", system_cuda="cuda_9.0.176")
    assert any("384.81" in s for s in steps.driver_too_old(cupy))
    torch = ctx(framework_version="torch 2.1.0", system_cuda="9.0")  # pip torch brings its own runtime
    assert not any("384.81" in s for s in steps.driver_too_old(torch))


def test_a_step_for_gpus_older_than_an_architecture_leads_where_the_gpu_is_one() -> None:
    out = ["Cast one operand so both match", "Use float16 instead of bfloat16 on GPUs older than Ampere"]
    v100 = planner.Context(cc=(7, 0))
    assert planner.finish(list(out), v100)[0].startswith("Use float16")
    assert planner.finish(list(out), planner.Context())[0].startswith("Cast")  # the GPU unknown: as they came


def test_a_cpu_build_is_replaced_first_by_the_same_release_in_a_cuda_build() -> None:
    c = ctx(framework_version="torch2.2.0+cpu")
    out = steps.cpu_only_build(c)
    assert out[0].startswith(
        "pip install --force-reinstall 'torch==2.2.0' --index-url https://download.pytorch.org/whl/cu1"
    )
    assert "nvidia-smi" in out[0]  # the driver unknown: the command that shows it
    assert steps.same_release_variant(c) is None  # elsewhere an unknown GPU and driver still say nothing


def test_cuda_home_unset_names_the_root_of_the_toolkit_the_facts_show() -> None:
    """shirgur/UMIS#5: CUDA 10.0 installed, CUDA_HOME never set; torch.utils.cpp_extension cannot build."""
    root = "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root."
    stated = planner.context(from_stated({"system_cuda": "cuda 10.0", "os": "ubuntu 18.04"}), root=root)
    for cause in ("toolchain-not-found", "env-path-misconfig"):
        assert steps.for_cause(cause, stated)[0].startswith("export CUDA_HOME=/usr/local/cuda-10.0 ")
    found = dataclasses.replace(stated, toolkit_root="/opt/cuda-12.4", system_cuda="12.4")
    assert steps.for_cause("toolchain-not-found", found)[0].startswith("export CUDA_HOME=/opt/cuda-12.4 ")
    windows = planner.context(from_stated({"system_cuda": "11.8", "os": "Windows 10"}), root=root)
    assert (
        "set CUDA_HOME=C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8"
        in steps.cuda_home(windows)[0]
    )
    nothing = planner.context(from_stated({"framework_version": "torch 2.1.0+cu121"}), root=root)
    assert "nvcc of CUDA 12.1" in steps.cuda_home(nothing)[0]
    assert (
        steps.cuda_home(dataclasses.replace(stated, root="nvcc fatal : Unsupported gpu architecture")) == []
    )


def test_ptx_the_driver_cannot_jit_beside_a_newer_toolkit_asks_for_that_toolkits_own_driver() -> None:
    """jax-ml/jax#9218: driver 460.73.01 (CUDA 11.2) beside the CUDA 11.3 toolkit XLA compiled with; PTX gets no
    minor-version compatibility, so the floor is 11.3's own 465.19.01, not 11.x's 450.80.02."""
    root = "RuntimeError: INTERNAL: CustomCall failed: jaxlib/cuda_prng_kernels.cc:30: operation cudaGetLastError() failed: the provided PTX was compiled with an unsupported toolchain."
    c = dataclasses.replace(
        ctx(driver="460.73.01", system_cuda="11.3", framework_version="jax 0.3.1"), root=root
    )
    step = steps.driver_too_old(c)[0]
    assert "465.19.01" in step and "11.3" in step
    reached = dataclasses.replace(c, system_cuda="11.2")  # a toolkit the driver reaches: not why
    assert "465.19.01" not in " ".join(steps.driver_too_old(reached))
    other = dataclasses.replace(
        c, root="RuntimeError: CUDA driver version is insufficient for CUDA runtime version"
    )
    assert "465.19.01" not in " ".join(steps.driver_too_old(other))  # not a PTX refusal


def test_ptx_a_program_ships_from_a_newer_cuda_than_the_driver_asks_for_that_cudas_own_driver() -> None:
    """amnsbr/cubnm#28 (blind set 64): a wheel whose binaries were compiled with CUDA 11.8, driver 460.80 (CUDA 11.2)
    beside a CUDA 11.2 toolkit; its PTX needs 11.8's own 520.61.05, not 11.x's minor-version floor 450.80.02."""
    root = "Error the provided PTX was compiled with an unsupported toolchain. at line 1269 in file /project/src/ext/bnm.cu"
    stated = ctx(
        driver="460.80",
        system_cuda="11.2",
        framework_version="cubnm wheel (binaries compiled with CUDA 11.8)",
    )
    assert stated.cuda == "11.8"
    step = steps.driver_too_old(dataclasses.replace(stated, root=root))[0]
    assert "520.61.05" in step and "build the program ships" in step and "450.80.02" not in step
    unsaid = ctx(driver="460.80", system_cuda="11.2", framework_version="cubnm wheel")
    assert "520.61.05" not in " ".join(steps.driver_too_old(dataclasses.replace(unsaid, root=root)))


def test_a_tensorflow_build_the_log_shows_is_not_its_releases_tested_one_gets_the_cuda_its_soname_names() -> (
    None
):
    """tensorflow/tensorflow#44567: a tf-nightly 2.5.0-dev20201103 asks for cusolver64_10.dll (CUDA 10.1..11.0)
    where 2.5.0's release was tested with CUDA 11.2; the thread's answer was CUDA 11.0."""
    c = dataclasses.replace(
        ctx(framework_version="tf-nightly-gpu 2.5.0-dev20201103", os="Windows 10", system_cuda="11.1"),
        soname="cusolver64_10.dll",
        library_range="10.1-11.0",
    )
    step = steps.cuda_libs_missing(c)[0]
    assert step.startswith("Install CUDA 11.0") and "v11.0\\bin" in step
    fits = dataclasses.replace(c, library_range="11.1-12.9", soname="cusolver64_11.dll")  # 11.2 ships it
    assert not steps.cuda_libs_missing(fits)[0].startswith("Install CUDA 11.0")


def test_the_cuda_the_facts_name_for_the_build_is_the_variant_reinstalled() -> None:
    """SupreethN/HOISTFormer#3: 'conda install pytorch==1.9.0 ... cudatoolkit=11.1' resolved to the CPU build; the
    reporter's fix was torch==1.9.0+cu111 (1.9.0 has cu102 and cu111 wheels)."""
    c = ctx(framework_version="pytorch==1.9.0 (conda, cudatoolkit=11.1 requested)")
    assert c.cuda == "11.1"
    assert steps.same_release_variant(c, unknown_ok=True) == ("1.9.0", "cu111")
    plain = ctx(framework_version="torch 1.9.0+cpu")  # no CUDA named: the one asking least of the driver
    assert steps.same_release_variant(plain, unknown_ok=True) == ("1.9.0", "cu102")


def test_a_framework_from_a_container_image_is_fixed_by_the_host_driver_or_another_image() -> None:
    """NGC's PyTorch 19.08 (CUDA 10.1) on a host driver too old: the steps reinstalled torch from a wheel
    index, which the image's own build makes moot (blind fix scenario of set 21)."""
    c = ctx(
        container="NGC pytorch:19.08-py3",
        framework_version="NGC PyTorch container 19.08-py3 (PyTorch 1.2.0, CUDA 10.1.243)",
    )
    assert c.image is not None and "19.08" in c.image and c.cuda == "10.1"
    got = planner.plan("driver-too-old", [], c, generic=[CU126])
    assert got[0].startswith("Upgrade the NVIDIA driver to 418") and "on the host" in got[0]
    assert "older release" in got[1] and not any("pip install" in s for s in got)
    # the same torch installed with pip keeps its wheel steps
    plain = ctx(framework_version="torch 1.2.0 (CUDA 10.1)")
    assert plain.image is None and not planner.contradicts(CU126, plain)


def test_a_cuda_build_asked_for_and_a_cpu_one_installed_gets_the_variant_nearest_the_cuda_named() -> None:
    """conda resolved 'pytorch==1.9.1 cudatoolkit=11.3' to the CPU build: 1.9.1 has cu102 and cu111 builds,
    and the one nearest the CUDA asked for is cu111 (blind fix scenario of set 21)."""
    c = ctx(
        framework_version="pytorch 1.9.1 (conda, requested together with cudatoolkit=11.3; installed pytorch_cpu)"
    )
    assert c.build == "cpu" and c.cuda == "11.3"
    assert steps.same_release_variant(c, unknown_ok=True) == ("1.9.1", "cu111")
    # no CUDA named: the oldest variant, which asks least of the driver
    assert steps.same_release_variant(ctx(framework_version="torch 1.9.1+cpu"), unknown_ok=True) == (
        "1.9.1",
        "cu102",
    )


def test_a_tensorflow_image_too_old_for_the_gpu_is_replaced_by_a_newer_image() -> None:
    """tensorflow/tensorflow:2.1.0-gpu-py3 (CUDA 10.1) on an RTX 3090: a pip install inside the image cannot
    bring the CUDA 11 libraries TF 2.4 loads; the image of that release can (blind fix scenario of set 24,
    fixed in the thread with the 2.4.1 GPU image)."""
    c = ctx(
        framework_version="TensorFlow 2.1.0 (tensorflow/tensorflow:2.1.0-gpu-py3 docker image)",
        gpu="GeForce RTX 3090",
        driver="460.39",
    )
    got = planner.plan("arch-unsupported", [], c)
    assert got[0].startswith(
        "Run the tensorflow/tensorflow:2.4.0-gpu image in place of tensorflow/tensorflow:2.1.0"
    )
    assert not any("pip install 'tensorflow" in s for s in got)


def test_tensorflow_1_grows_its_memory_through_the_sessions_config() -> None:
    """TF 1.9's 'could not create cudnn handle' out of memory: tf.config's memory growth is the 2.x API, the
    1.x one is the session's gpu_options.allow_growth (blind fix scenario of set 28)."""
    tf1 = planner.plan("gpu-oom", [], ctx(framework_version="tensorflow-gpu 1.9.0"))
    assert tf1[0].startswith("TensorFlow 1.x:") and "config.gpu_options.allow_growth = True" in tf1[0]
    assert planner.plan("gpu-oom", [], ctx(framework_version="tensorflow 2.10.0")) == []


def test_an_image_whose_cuda_predates_the_gpu_gets_a_wheel_of_a_newer_cuda_and_no_old_gpu_advice() -> None:
    """NVIDIA/nvidia-container-toolkit#259: an RTX 3070 Ti (8.6) in pytorch/pytorch:1.4-cuda10.1 (CUDA 10.1 builds
    for 7.5 at most): no build of that image runs, so a wheel of a CUDA 11 build is the fix, and steps for GPUs
    that new builds dropped are not about this GPU."""
    facts = {
        "gpu": "NVIDIA GeForce RTX 3070 Ti",
        "driver": "470.103.01",
        "framework_version": "pytorch 1.4 (image pytorch/pytorch:1.4-cuda10.1-cudnn7-devel)",
    }
    c = planner.context(from_stated(facts), "torch", {})
    assert c.image is not None and c.cc == (8, 6)
    generic = [
        "For an old GPU dropped by new builds, install the last release or variant that still ships it"
    ]
    out = planner.plan("arch-unsupported", [], c, generic, beside_finding=False)
    assert "download.pytorch.org/whl/cu11" in out[0]
    assert not any("old GPU dropped" in s for s in out)
    # an image whose CUDA builds for the GPU keeps its own build: the wheel step goes
    ok = planner.context(from_stated({**facts, "gpu": "Tesla V100"}), "torch", {})
    assert planner._reinstall_inside_image(
        "pip install torch --index-url https://download.pytorch.org/whl/cu118", ok
    )


def test_forward_compatibility_is_not_offered_to_a_gpu_that_refuses_it() -> None:
    """vllm-project/vllm#5510: error 804 on an RTX 4090; cuda-compat works on datacenter GPUs only."""
    step = "On a datacenter GPU (A100, H100, L4, T4, ...) the CUDA forward-compatibility package runs a newer CUDA on the old driver: apt install cuda-compat-X-Y"
    assert planner.plan("driver-too-old", [step], ctx(gpu="RTX 4090")) == []
    refused = dataclasses.replace(
        ctx(), root="Error 804: forward compatibility was attempted on non supported HW"
    )
    assert planner.plan("driver-too-old", [step], refused) == []
    assert planner.plan("driver-too-old", [step], ctx(gpu="NVIDIA A100-SXM4-80GB")) == [step]


def test_jax_on_native_windows_is_sent_to_wsl2_not_to_a_cuda_extra() -> None:
    """cloudhan/jax-windows-builder#5: JAX publishes CUDA wheels for Linux only (jax.toml [native_windows])."""
    windows = ctx(os="Windows 10", framework_version="jax 0.3.4")
    planned = planner.plan("cpu-only-build", ["pip install -U 'jax[cuda12]'"], windows)
    assert planned and not any("jax[cuda" in p for p in planned) and "WSL2" in planned[0]
    got = steps.cpu_only_build(dataclasses.replace(windows, framework="jax"))
    assert len(got) == 1 and "WSL2" in got[0] and "jax[cuda" not in got[0]
    linux = ctx(os="Ubuntu 22.04", framework_version="jax 0.4.30")
    assert any(
        "jax[cuda12]" in p for p in planner.plan("cpu-only-build", ["pip install -U 'jax[cuda12]'"], linux)
    )


def test_a_step_that_names_cuda_compat_beside_other_advice_keeps_it_on_a_geforce() -> None:
    step = "Or use an image tag built on an older CUDA that your driver supports, or NVIDIA_DISABLE_REQUIRE=1 on a datacenter GPU with the cuda-compat package"
    (kept,) = planner.plan("driver-too-old", [step], ctx(gpu="NVIDIA GeForce RTX 3090"))
    assert "an older CUDA that your driver supports" in kept
    assert planner._compat_on_unsupported_gpu("apt install cuda-compat-12-4", ctx(gpu="RTX 3080Ti"))


def test_on_a_jetson_torch_comes_for_its_jetpack_never_a_desktop_cuda() -> None:
    """JetPack brings the CUDA a Jetson runs (dusty-nv/jetson-inference#622: a wheel for another JetPack asks
    for libcudart.so.10.0): the wheel NVIDIA builds for that JetPack; a toolkit from NVIDIA's archive or PyTorch's
    desktop CUDA wheels contradict it. Thor (JetPack 7) runs NVIDIA's SBSA wheels, so it is not read so."""
    c = ctx(os="JetPack 4.4", framework_version="torch 1.1.0", gpu="Jetson Nano")
    assert c.jetpack == "JetPack 4.4"
    first = steps.for_cause("cuda-libs-missing", c)[0]
    assert "JetPack 4.4" in first and "download.pytorch.org" not in first
    assert planner.contradicts(CU126, c)
    assert planner.contradicts("Install CUDA 10.0: https://developer.nvidia.com/cuda-toolkit-archive", c)
    assert ctx(gpu="Jetson Thor", os="JetPack 7").jetpack is None
    assert ctx(gpu="Jetson Orin Nano").jetpack == ""
    assert ctx(gpu="RTX 4090").jetpack is None


def test_a_tensorflow_for_an_old_gpu_is_one_whose_own_builds_hold_it() -> None:
    """No TensorFlow GPU build goes below compute capability 3.5: for a 3.0 GPU no release is offered (2.3's
    CUDA 10.1 could build 3.0, but its wheels hold 3.5 and newer)."""
    assert (
        steps._tf_for_gpu(ctx(gpu="GRID K520", compute_capability="3.0", framework_version="tensorflow 1.15"))
        == []
    )
    assert steps._tf_for_gpu(ctx(gpu="Tesla K40m", framework_version="tensorflow 1.15"))


def test_on_macos_the_step_is_mps_and_no_cuda_install() -> None:
    """PyTorch has no CUDA build for macOS (dwrensha/acronymy-assistant#2: --device mps fixed it)."""
    c = ctx(os="macOS", gpu="Apple M1 (MacBook Pro)")
    assert "mps" in steps.for_cause("cpu-only-build", c)[0]
    assert planner.contradicts(CU126, c) and planner.contradicts(
        "conda install pytorch-cuda=12.1 -c nvidia", c
    )
    assert not planner.contradicts(CU126, ctx(os="Ubuntu 22.04"))


def test_a_conda_plan_of_a_cpu_build_gets_the_same_releases_cuda_variant_in_condas_terms() -> None:
    """pyg-team/pytorch_geometric#8948 (2.2.0: pytorch-cuda from -c nvidia) and pytorch/pytorch#67108 (1.10.0,
    before pytorch-cuda existed: cudatoolkit); without a conda plan on the root line, no conda step."""
    plan = "instead it is trying to install pyg/linux-64::pyg-2.5.0-py311_torch_2.2.0_cpu"
    new = dataclasses.replace(ctx(framework_version="torch 2.2.0"), root=plan)
    assert "pytorch=2.2.0 pytorch-cuda=12.1 -c pytorch -c nvidia" in steps.for_cause("cpu-only-build", new)[0]
    old = dataclasses.replace(
        ctx(framework_version="pytorch 1.10.0 (conda install pytorch cudatoolkit=11.3 -c pytorch)"),
        root="pytorch/win-64::pytorch-1.10.0-py3.8_cpu_0",
    )
    assert "cudatoolkit=11.3" in steps.for_cause("cpu-only-build", old)[0]
    assert "conda install" not in steps.for_cause("cpu-only-build", ctx(framework_version="torch 2.2.0"))[0]


def test_tensorflow_2_11_to_2_13_without_libdevice_gets_its_guides_conda_nvcc() -> None:
    """tensorflow.org/install/pip for 2.11-2.13 (Ubuntu 22.04): conda's cuda-nvcc and XLA_FLAGS; 2.10 is not
    in that range; on native Windows the step is not offered."""
    tf211 = ctx(framework_version="tensorflow 2.11", os="Ubuntu 22.04")
    assert "conda install -c nvidia cuda-nvcc" in steps.for_cause("toolchain-not-found", tf211)[0]
    assert "xla_gpu_cuda_data_dir=$CONDA_PREFIX/lib" in steps.for_cause("toolchain-not-found", tf211)[0]
    tf210 = ctx(framework_version="tensorflow 2.10", os="Ubuntu 22.04")
    assert not any("cuda-nvcc=11.3.58" in s for s in steps.for_cause("toolchain-not-found", tf210))


def test_a_module_lacking_a_tensorflow_symbol_is_rebuilt_with_tensorflow_s_own_flags() -> None:
    """flownet2-tf#87: a custom op built with another C++ ABI than the TensorFlow wheel's; the cause's NumPy and MKL
    steps do not apply to a symbol the facts place in tensorflow::."""
    log_facts = {"namespace": "tensorflow", "library": "tensorflow", "module": "correlation"}
    c = planner.context(from_stated({"framework_version": "tensorflow 1.15"}), log_facts=log_facts)
    numpy_step = (
        "Pin the library back to the release the package was built against: pip install 'numpy<2' (NumPy 2)"
    )
    out = planner.plan("binary-incompatible", [], c, generic=[numpy_step])
    assert "tf.sysconfig.get_compile_flags()" in out[0] and "the module correlation" in out[0]
    assert numpy_step not in out
    # the same symbol in a JAX log (xla:: is in TensorFlow's row): no TensorFlow rebuild, and NumPy still dropped
    jax = planner.context(from_stated({"framework_version": "jaxlib 0.4.20"}), log_facts=log_facts)
    assert planner.plan("binary-incompatible", [], jax, generic=[numpy_step]) == []
    # no symbol read: the NumPy step stands
    assert planner.plan(
        "binary-incompatible", [], ctx(framework_version="tensorflow 2.15"), generic=[numpy_step]
    ) == [numpy_step]


def test_no_step_swaps_the_torch_a_package_pins() -> None:
    """vllm 0.4.3 on a 470 driver: its kernels are built against torch 2.3.0 +cu121, so a cu118 torch (or another
    release) under it breaks them; the driver upgrade stays."""
    c = ctx(framework_version="vllm 0.4.3", driver="470.82", gpu="Tesla T4")
    assert c.torch_pinned_by == "vllm 0.4.3"
    cu118 = "pip install --force-reinstall 'torch==2.3.0' --index-url https://download.pytorch.org/whl/cu118"
    assert planner.contradicts(cu118, c)
    assert not planner.contradicts("Upgrade the NVIDIA driver to 525.60.13 or newer", c)
    assert not planner.contradicts("pip install -U vllm torch", c)  # the package moves with it
    assert not planner.contradicts(cu118, ctx(framework_version="torch 2.3.0", driver="470.82"))


def test_a_torch_install_from_its_index_takes_the_xformers_its_release_pins_along() -> None:
    """Comfy-Org/ComfyUI#5281: xformers 0.0.27 (pins torch 2.3.1) beside a CPU torch; the thread's fix installed
    torch and xformers together from the PyTorch index, which builds both per CUDA variant."""
    c = ctx(other="xformers: 0.0.27", driver="CUDA Version: 12.7")
    step = "pip install --force-reinstall 'torch==2.3.1' --index-url https://download.pytorch.org/whl/cu121"
    assert planner.with_pinning_package(step, c) == (
        "pip install --force-reinstall 'torch==2.3.1' xformers --index-url https://download.pytorch.org/whl/cu121"
    )
    assert not planner.contradicts(planner.with_pinning_package(step, c), c)
    vllm = ctx(framework_version="vllm 0.4.3")  # vLLM is not on the PyTorch index: nothing added
    assert planner.with_pinning_package(step, vllm) == step


def test_no_gpu_in_a_container_is_fixed_by_its_runtimes_own_start() -> None:
    """knowledge/container_gpus.toml: --nv for Singularity, CDI for podman, a pod's nvidia.com/gpu; Docker's
    --gpus is dropped where another runtime starts the container (set 54: apptainer/singularity#6203)."""
    sing = ctx(container="singularity version 3.6.4; singularity shell nemo.sif")
    assert sing.container == "singularity"
    assert any("--nv" in s for s in steps.for_cause("no-gpu-visible", sing))
    docker_step = "In Docker, start the container with --gpus all (nvidia-container-toolkit)"
    assert planner.contradicts(docker_step, sing)
    assert not planner.contradicts(docker_step, ctx(container="docker compose up"))
    assert not planner.contradicts(docker_step, planner.Context())  # no container known: kept
    podman = steps.for_cause(
        "no-gpu-visible", ctx(container="podman run -it quay.io/jupyter/pytorch-notebook")
    )
    assert any("nvidia.com/gpu=all" in s for s in podman)
    assert steps.for_cause("no-gpu-visible", ctx(os="Ubuntu 22.04")) == []  # not in a container: nothing here


def test_a_torch_of_unknown_build_on_an_old_driver_gets_the_driver_the_newest_build_needs() -> None:
    """Paperspace ml-in-a-box#13 (set 54): 'found version 11070' and no torch stated: beside the newest torch
    the driver runs, the driver floor of the newest release's CUDA build (12.x: 525.60.13 by minor-version
    compatibility)."""
    doc = explain_stated(
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11070). "
        "Please update your GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch "
        "version that has been compiled with your version of the CUDA driver.",
        {"container": "Paperspace ML-in-a-Box machine image"},
    )
    fixes = doc["causes"][0]["fix"]
    assert doc["causes"][0]["id"] == "driver-too-old"
    assert any("whl/cu118" in s for s in fixes) and any("525.60.13" in s for s in fixes)


def test_a_build_cuda_stated_without_its_framework_sets_the_driver_floor() -> None:
    """faceswap-playground (set 58): 'cudatoolkit 10.0.130' stated as the build's CUDA, no framework named, on a
    Windows driver 399.24: the driver step names CUDA 10.0's Windows floor."""
    doc = explain_stated(
        "cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version",
        {"driver": "399.24", "os": "Windows-10-10.0.18362-SP0", "framework_cuda": "cudatoolkit 10.0.130"},
    )
    assert doc["causes"][0]["id"] == "driver-too-old"
    assert any("411.31" in s for s in doc["causes"][0]["fix"])


def test_an_arch_unsupported_torch_step_names_the_gpus_architecture() -> None:
    c = ctx(gpu="RTX 3080", framework_version="torch 1.8.1+cu102")
    assert any("(sm_86)" in s for s in steps.for_cause("arch-unsupported", c))


def test_on_native_windows_no_step_names_linux_paths() -> None:
    """talmolab/sleap#598-like: a TensorFlow kernel error on Windows 10 with CUDA 10.1 stated; the ptxas step names
    the Windows toolkit folder, and generic steps with /usr/local/cuda or LD_LIBRARY_PATH are left out."""
    log = (
        "F .\\tensorflow/core/kernels/random_op_gpu.h:232] Non-OK-status: GpuLaunchKernel(...) status: Internal: "
        "no kernel image is available for execution on the device"
    )
    facts = {"gpu": "NVIDIA Quadro K620", "os": "Windows 10", "framework_cuda": "10.1"}
    steps = [s for c in explain_stated(log, facts)["causes"] for s in c["fix"]]
    assert steps and not [s for s in steps if planner.LINUX_ONLY.search(s)]
    assert any("C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.1\\bin" in s for s in steps)
    linux = [s for c in explain_stated(log, {**facts, "os": "Ubuntu 20.04"})["causes"] for s in c["fix"]]
    assert any(planner.LINUX_ONLY.search(s) for s in linux)


def test_a_wheel_of_a_cuda_no_newer_than_the_driver_comes_before_one_that_needs_minor_version_compatibility() -> (
    None
):
    """A CUDA 12.8 driver (570): torch's newest release in a CUDA <= 12.8 variant, not its cu129 (which runs
    through minor-version compatibility, without PTX JIT for the newer toolchain); a Blackwell GPU that only a
    newer variant holds still gets it; with the driver unknown, the oldest CUDA that holds the GPU."""
    for gpu, want in (("A100", lambda cuda: cuda <= (12, 8)), ("RTX 5090", lambda cuda: cuda >= (12, 8))):
        chosen = steps.newest_torch_for("12.8", ctx(gpu=gpu).cc)
        assert chosen is not None
        cuda = steps._cuda_key(chosen[1])[:2]
        assert want(cuda) and cuda[0] == 12, (gpu, chosen)
    assert steps._by_driver(["cu126", "cu129", "cu130", "cu128"], "12.8") == [
        "cu128",
        "cu126",
        "cu130",
        "cu129",
    ]
    assert steps._by_driver(["cu129", "cu126"], None) == ["cu126", "cu129"]


def test_a_cpu_build_conda_installed_is_replaced_in_condas_terms_first() -> None:
    """facebookresearch/DiT#109 (blind set 63): conda list shows pytorch 2.5.1 py3.12_cpu_0 beside pytorch-cuda
    11.7, which 2.5 has no build for: conda's own command with a CUDA 2.5.1 has (11.8), then pip's."""
    conda = ctx(framework_version="pytorch 2.5.1 py3.12_cpu_0", framework_cuda="pytorch-cuda 11.7")
    assert conda.installer == "conda" and conda.build == "cpu"
    plan = steps.cpu_only_build(conda)
    assert plan[0].startswith("conda install pytorch=2.5.1 pytorch-cuda=11.8 -c pytorch -c nvidia")
    assert "pytorch-cuda=11.7" not in " ".join(plan) and "whl/cu118" in plan[1]
    pip = ctx(framework_version="torch 2.5.1+cpu")
    assert pip.installer is None and not steps.cpu_only_build(pip)[0].startswith("conda")
    assert ctx(framework_version="pytorch-1.7.1 |cpu_py37hf1c21f6_1").installer == "conda"


def test_nvlink_older_than_the_cubin_names_the_cuda_that_compiled_it() -> None:
    """danijar/dreamerv3#64 (blind set 67): XLA's nvlink of CUDA 11.4 given a cubin of 11.8."""
    root = (
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: nvlink exited with non-zero error code 256,output: nvlink "
        "fatal  : Input file '/tmp/tempfile-llpc-cab04a7-18966-5fd3b5872b691.cubin' newer than toolkit (118 vs114)"
    )
    c = dataclasses.replace(ctx(framework_version="jax[cuda11_pip]", driver="470"), root=root)
    step = steps.toolchain_not_found(c)[0]
    assert "CUDA 11.8" in step and "/usr/local/cuda-11.8/bin" in step and "CUDA 11.4 toolkit off PATH" in step
    assert not steps._nvlink_older(dataclasses.replace(c, root="nvlink fatal : Could not open input file"))


def test_no_cuda_toolset_under_visual_studio_copies_the_toolkits_build_customizations() -> None:
    root = "CMake Error at CMakeLists.txt:12 (project): No CUDA toolset found."
    c = dataclasses.replace(ctx(os="Windows 11", system_cuda="12.5 (12.5.40), CUDA_PATH set"), root=root)
    step = steps.toolchain_not_found(c)[0]
    assert (
        "CUDA\\v12.5\\extras\\visual_studio_integration\\MSBuildExtensions" in step
        and "BuildCustomizations" in step
    )
    unknown = steps.toolchain_not_found(dataclasses.replace(c, system_cuda=None))[0]
    assert "the CUDA toolkit's build customizations" in unknown
