"""What a run records about the machine it ran on (fsnn.runs.provenance)."""

import platform

import torch

from fsnn.runs.provenance import cpu_name, device_description


def test_cpu_name_is_the_model_name_of_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"
    )
    assert cpu_name(cpuinfo) == "AMD EPYC 9654 96-Core Processor"


def test_cpu_name_falls_back_to_the_platform_without_cpuinfo(tmp_path):
    assert cpu_name(tmp_path / "absent") == (platform.processor() or platform.machine())
    (tmp_path / "empty").write_text("processor\t: 0\nmodel name\t:\n")
    assert cpu_name(tmp_path / "empty") == (platform.processor() or platform.machine())


def test_a_cpu_run_names_the_cpu_and_its_threads():
    assert device_description("cpu") == f"cpu ({cpu_name()}, {torch.get_num_threads()} threads)"
    assert cpu_name()
