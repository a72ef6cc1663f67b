"""benchmarks/gpu_check.py fails, with exit status 1, when CPU and GPU disagree.

The GPU itself is not needed: "cpu" stands in for "cuda" (as in the script's
dry run) and the "GPU" output is perturbed on purpose; the tolerances are the
script's own.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from toy_estimators import ToyTorchRegressor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu_check  # noqa: E402


@pytest.fixture
def on_cpu(monkeypatch):
    monkeypatch.setattr(gpu_check, "GPU", "cpu")


def test_tolerances_separate_float_noise_from_disagreement():
    a = np.linspace(1.0, 2.0, 50)
    assert gpu_check._agreement(a * (1 + 0.5 * gpu_check.REL_TOL), a)["ok"]
    assert not gpu_check._agreement(a * (1 + 1.2 * gpu_check.REL_TOL), a)["ok"]
    labels = np.arange(200) % 3
    assert gpu_check._agreement(gpu_check._perturbed(labels, 0.04), labels)["ok"]
    assert not gpu_check._agreement(gpu_check._perturbed(labels, 0.06), labels)["ok"]
    assert not gpu_check._agreement(labels[:-1], labels)["ok"]  # shapes differ


@pytest.mark.parametrize("perturb", [0.0, 0.1])
def test_a_perturbed_gpu_output_makes_the_run_exit_non_zero(on_cpu, perturb):
    row = gpu_check.check_estimator_on_gpu(
        "toy", ToyTorchRegressor, perturb=perturb, timing=False
    )
    error = row["cpu_vs_gpu"]["relative_error"]
    assert (error <= gpu_check.REL_TOL) == (perturb == 0.0)
    row.pop("_pickles")  # the round trip to a CPU-only process: next test
    assert gpu_check.exit_code([row]) == (1 if perturb else 0)
    table = gpu_check.format_table([row])
    assert max(len(line) for line in table.splitlines()) <= 100
    assert ("FAIL toy" in table) == bool(perturb)


def test_models_are_unpickled_in_a_process_without_cuda(on_cpu):
    rows = [
        gpu_check.check_estimator_on_gpu("kept", ToyTorchRegressor, timing=False)
        for _ in range(2)
    ]
    rows[1]["estimator"] = "tampered"
    blob, expected = rows[1]["_pickles"][0]
    rows[1]["_pickles"][0] = (blob, expected * 1.01)  # not what the model says
    gpu_check.verify_pickles(rows)
    assert rows[0]["pickle_to_cpu"]["ok"] and not rows[1]["pickle_to_cpu"]["ok"]
    assert gpu_check.exit_code(rows) == 1
    assert gpu_check.exit_code(rows[:1]) == 0


def test_a_timing_past_the_budget_is_skipped_not_failed(on_cpu):
    row = gpu_check.check_estimator_on_gpu("late", ToyTorchRegressor)
    row.pop("_pickles")
    gpu_check.run_timings([row], deadline=-np.inf)
    assert row["timing"] == {"skipped": "budget"} and "_timing" not in row
    assert gpu_check.exit_code([row]) == 0
    assert "skipped" in gpu_check.format_table([row])
