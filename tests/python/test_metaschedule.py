"""The TVM MetaSchedule comparison harness (benchmarks/metaschedule/): TE workloads
that compute what the ops-v0 programs compute, tuning with MetaSchedule, and
`tensorgym suite --metaschedule` timing the tuned kernels side by side with ours.

Needs TVM in a virtual environment of its own (benchmarks/metaschedule/setup makes
build/tvm-venv; TENSORGYM_TVM_PYTHON names another interpreter); skipped without it.
"""
import csv
import json
import os
import subprocess

import pytest

from conftest import ROOT, run_cli

HARNESS = os.path.join(ROOT, "benchmarks", "metaschedule")


def tvm_python():
    python = os.environ.get("TENSORGYM_TVM_PYTHON") or os.path.join(ROOT, "build", "tvm-venv", "bin", "python")
    if not os.path.exists(python):
        return None
    probe = subprocess.run([python, "-c", "import tvm; from tvm.s_tir import meta_schedule"], capture_output=True)
    return python if probe.returncode == 0 else None


TVM_PYTHON = tvm_python()
pytestmark = pytest.mark.skipif(
    TVM_PYTHON is None,
    reason="TVM is not installed: run benchmarks/metaschedule/setup (or set TENSORGYM_TVM_PYTHON) to test the "
    "MetaSchedule harness",
)


def tune(binary, out, *args, timeout=600):
    return subprocess.run(
        [TVM_PYTHON, os.path.join(HARNESS, "tune.py"), "--tensorgym", binary, "--out", str(out), *args],
        capture_output=True, text=True, timeout=timeout, check=True,
    )


def suite_rows(out):
    with open(os.path.join(out, "results.csv")) as f:
        return {r["benchmark"].rsplit("/", 1)[1]: r for r in csv.DictReader(f)}


def test_te_workloads_compute_what_the_programs_compute(binary, tmp_path):
    # The smallest benchmark of each family, untuned: the suite runs every TVM kernel
    # once on ours' inputs and refuses one whose output differs (then the column is empty).
    names = "gmm-1,c1d-4,c2d-4,c3d-2,grp-4,dil-4,dep-4,t2d-1,cap-4,nrm-1"
    tune(binary, tmp_path / "ms", "--benchmarks", names, "--trials", "0")
    r = run_cli("suite", "--suite", "ops-v0", "--benchmarks", names, "--agent", "random", "--trials", "1",
                "--reward", "est_cycles", "--rounds", "1", "--quiet", "--metaschedule", str(tmp_path / "ms"),
                "--out", str(tmp_path / "suite"), check=False)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    rows = suite_rows(tmp_path / "suite")
    assert sorted(rows) == sorted(names.split(","))
    for name, row in rows.items():
        assert float(row["metaschedule_gflops"]) > 0, (name, row)
        assert float(row["vs_metaschedule"]) > 0, (name, row)


def test_a_tuned_kernel_is_timed_side_by_side_with_ours(binary, tmp_path):
    tune(binary, tmp_path / "ms", "--benchmarks", "gmm-1", "--trials", "8", "--per-round", "4")
    info = json.loads((tmp_path / "ms" / "tvm.json").read_text())
    assert os.path.exists(info["libtvm_ffi"]) and os.path.exists(info["libtvm_runtime"])
    assert info["target"]["num-cores"] == 1
    record = json.loads((tmp_path / "ms" / "gmm-1.json").read_text())
    assert record["trials"] == 8 and len(record["curve"]) == 8
    assert record["curve"] == sorted(record["curve"])  # best so far
    assert 1 <= record["trials_to_90"] <= 8 and record["search_s"] > 0

    # Tuning again into the same directory skips what is done; other settings are refused.
    again = tune(binary, tmp_path / "ms", "--benchmarks", "gmm-1", "--trials", "8", "--per-round", "4")
    assert "tuned earlier, skipped" in again.stdout
    with pytest.raises(subprocess.CalledProcessError) as refused:
        tune(binary, tmp_path / "ms", "--benchmarks", "gmm-1", "--trials", "9", "--per-round", "4")
    assert "other settings" in refused.value.stderr

    r = run_cli("suite", "--suite", "ops-v0", "--benchmarks", "gmm-1", "--agent", "random", "--trials", "8",
                "--reward", "est_cycles", "--rounds", "1", "--quiet", "--metaschedule", str(tmp_path / "ms"),
                "--out", str(tmp_path / "suite"), check=False)
    assert r.returncode == 0, r.stderr
    assert "MetaSchedule: TVM 0.27" in r.stdout
    row = suite_rows(tmp_path / "suite")["gmm-1"]
    assert row["metaschedule_trials"] == "8" and row["metaschedule_trials_to_90"] == str(record["trials_to_90"])
    assert float(row["metaschedule_gflops"]) > 0 and float(row["vs_metaschedule"]) > 0
    assert 1 <= int(row["trials_to_90"]) <= 8


def test_a_kernel_that_computes_something_else_is_refused(binary, tmp_path):
    # gmm-1's shapes, but C = A.B + 1: loads, takes ours' buffers, and must be caught.
    tune(binary, tmp_path / "ms", "--benchmarks", "gmm-1", "--trials", "0")
    wrong = """
import sys
from tvm import te
import tvm
A = te.placeholder((128, 128), name="A"); B = te.placeholder((128, 128), name="B")
k = te.reduce_axis((0, 128), name="k")
S = te.compute((128, 128), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="S")
C = te.compute((128, 128), lambda i, j: S[i, j] + 1.0, name="C")
tvm.compile(te.create_prim_func([A, B, C]), target="llvm").export_library(sys.argv[1])
"""
    subprocess.run([TVM_PYTHON, "-c", wrong, str(tmp_path / "ms" / "gmm-1.so")], check=True, timeout=300)
    r = run_cli("suite", "--suite", "ops-v0", "--benchmarks", "gmm-1", "--agent", "random", "--trials", "2",
                "--reward", "est_cycles", "--rounds", "1", "--quiet", "--metaschedule", str(tmp_path / "ms"),
                "--out", str(tmp_path / "suite"), check=False)
    assert "MetaSchedule's output" in r.stderr and "differs from ours" in r.stderr, r.stderr
    assert suite_rows(tmp_path / "suite")["gmm-1"]["metaschedule_gflops"] == ""


def test_layout_free_weights_are_packed_once_ahead_of_the_runs(binary, tmp_path):
    # The convolutions' weights are layout-free: MetaSchedule's RewriteLayout packs them,
    # tune.py exports the pack as `prepack` and names it in the record, and the suite
    # packs once, then checks and times `main` over the packed weights.
    ms = tmp_path / "ms"
    tune(binary, ms, "--benchmarks", "c1d-4", "--trials", "4", "--per-round", "4")
    record = json.loads((ms / "c1d-4.json").read_text())
    assert record["prepack"]["input"] == 1, record["prepack"]  # W
    packed = 1
    for d in record["prepack"]["shape"]:
        packed *= d
    assert packed >= 512 * 512 * 3, record["prepack"]  # c1d-4's W: [512, 512, 3], maybe padded

    args = ["suite", "--suite", "ops-v0", "--benchmarks", "c1d-4", "--agent", "random", "--trials", "2",
            "--reward", "est_cycles", "--rounds", "1", "--quiet", "--metaschedule", str(ms)]
    r = run_cli(*args, "--out", str(tmp_path / "suite"), check=False)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert float(suite_rows(tmp_path / "suite")["c1d-4"]["metaschedule_gflops"]) > 0

    # A record whose prepack names an input the benchmark lacks is refused, by name.
    record["prepack"]["input"] = 7
    (ms / "c1d-4.json").write_text(json.dumps(record))
    r = run_cli(*args, "--out", str(tmp_path / "suite2"), check=False)
    assert "packs input 7, but the benchmark has 2 inputs" in r.stderr, r.stderr
    assert suite_rows(tmp_path / "suite2")["c1d-4"]["metaschedule_gflops"] == ""
