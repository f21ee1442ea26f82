"""Tune ops-v0 benchmarks with TVM's MetaSchedule and export the kernels for
`tensorgym suite --metaschedule DIR`, which times them side by side with ours.

Runs in the TVM virtual environment that benchmarks/metaschedule/setup makes (TVM is
never a dependency of TensorGym itself):

    build/tvm-venv/bin/python benchmarks/metaschedule/tune.py --families gmm,c2d \\
        --trials 64 --out results/ms-64
    build/bin/tensorgym suite --suite ops-v0 --families gmm,c2d --trials 64 \\
        --metaschedule results/ms-64 --out results/tg-64

Each benchmark is tuned alone (`tune_tir`) with the trial budget, `--per-round`
candidates per round, one builder and one measuring process, for a target of this
machine's CPU (`llvm -mcpu=<host>`) with `--threads` cores; TVM's thread pool gets the
same number of threads. Writes, per benchmark, DIR/<name>.so (the best schedule, built
with `tvm.compile`) and DIR/<name>.json (trials, search seconds, trials to reach 90% of
the final best, the best-so-far curve), and DIR/tvm.json (the versions, the target and
TVM's runtime libraries, which the suite loads). A benchmark with a record for the
same settings is skipped, so an interrupted run resumes.

Weights: the workloads declare the convolutions' weights layout-free, so MetaSchedule's
RewriteLayout may give the kernel a packing stage for them (its builder already times
candidates without it). The tuned function is split as relax's
SplitLayoutRewritePreproc splits it in a model: DIR/<name>.so then holds `main` over
the packed weights and `prepack` (weights -> packed weights), and the record names the
input and the packed shape ("prepack"); the suite runs `prepack` once, ahead of the
timed runs, as ours does its constant work and oneDNN its weight reorder.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def benchmark_shapes(tensorgym, suite):
    """{name: shape text} of every benchmark of `suite`, from `tensorgym benchmarks`."""
    out = subprocess.run([tensorgym, "benchmarks", suite, "--json"], check=True, capture_output=True, text=True).stdout
    return {b["uri"].rsplit("/", 1)[1]: b["shape"] for b in json.loads(out)["benchmarks"]}


def benchmark_flops(tensorgym, suite, name):
    out = subprocess.run(
        [tensorgym, "run", "--benchmark", f"benchmark://{suite}/{name}", "--observe", "flops", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    return float(json.loads(out)["observations"]["flops"])


def select(suite, shapes, families, benchmarks):
    if benchmarks:
        missing = [b for b in benchmarks if b not in shapes]
        if missing:
            sys.exit(f"tune.py: {suite} has no benchmark {', '.join(missing)}")
        return benchmarks
    known = sorted({n.split("-")[0] for n in shapes})
    bad = [f for f in families if f not in known]
    if bad:
        sys.exit(f"tune.py: {suite} has no family {', '.join(bad)} (families: {', '.join(known)})")
    return [n for n in shapes if "-b" not in n and (not families or n.split("-")[0] in families)]


def trials_to_reach(curve, fraction):
    """First trial (1-based) whose best-so-far reaches `fraction` of the final best (as
    cli/metaschedule_results.cc counts TensorGym's)."""
    if not curve or curve[-1] <= 0:
        return 0
    return next(i + 1 for i, v in enumerate(curve) if v >= fraction * curve[-1])


def tune_one(name, shape, flops, args, target):
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from workloads import prim_func, tensors

    mod = prim_func(name, shape)
    if args.trials == 0:  # the workload as written, untuned: checks it against the program
        return export(tvm.compile(mod, target=target), name, shape, args, [], 0.0, "", None)
    with tempfile.TemporaryDirectory(prefix=f"ms-{name}-") as work:
        start = time.perf_counter()
        db = ms.tune_tir(
            mod=mod,
            target=target,
            work_dir=work,
            max_trials_global=args.trials,
            num_trials_per_iter=args.per_round,
            builder=ms.builder.LocalBuilder(max_workers=1),
            runner=ms.runner.LocalRunner(),
            seed=args.seed,
        )
        sch = ms.tir_integration.compile_tir(db, mod, target)
        search_s = time.perf_counter() - start
        # Measured candidates in the order they were measured (the database's file
        # appends them as they come back); failed builds or runs have no run_secs.
        curve, best = [], 0.0
        with open(os.path.join(work, "database_tuning_record.json")) as f:
            for line in f:
                record = json.loads(line)[1]
                secs = [float(s) for s in (record[1] or [])]
                if secs and min(secs) < 1e9:
                    best = max(best, flops / (sum(secs) / len(secs)) / 1e9)
                curve.append(best)
    if sch is None:
        raise RuntimeError(f"{name}: MetaSchedule found no valid schedule in {args.trials} trials")
    kernel, prepack = split_weight_prepack(sch.mod["main"], tensors(name, shape))
    return export(tvm.compile(kernel, target=target), name, shape, args, curve, search_s, str(sch.trace), prepack)


def split_weight_prepack(func, te_tensors):
    """(IRModule, prepack record or None): the tuned PrimFunc `func` as `main` alone when
    it packs no weights; else `main` over the packed weights and `prepack`, split by
    relax's SplitLayoutRewritePreproc from a one-call relax function, and the record
    {"input": index of the weights, "shape": the packed shape}."""
    import tvm
    from tvm import relax

    def tensor_type(t):
        return relax.TensorType([int(d) for d in t.shape], t.dtype)

    inputs, output = te_tensors[:-1], te_tensors[-1]
    bb = relax.BlockBuilder()
    params = [relax.Var(t.op.name, tensor_type(t)) for t in inputs]
    with bb.function("main", params):
        with bb.dataflow():
            gv = bb.add_func(func.without_attr("global_symbol"), "kernel")
            out = bb.emit_output(bb.emit(relax.call_tir(gv, params, tensor_type(output))))
        bb.emit_func_output(out)
    split = relax.transform.SplitLayoutRewritePreproc()(bb.get())
    funcs = {gv.name_hint: f for gv, f in split.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}
    if "kernel_prepacked" not in funcs:
        return tvm.IRModule({"main": func}), None
    main, prepack = funcs["kernel_prepacked"], funcs["kernel_weight_prepack"]
    if len(prepack.params) != 2:
        raise RuntimeError(f"MetaSchedule packs {len(prepack.params) - 1} tensors; the suite runs a prepack of one")
    # prepack(W, W_packed); main takes W_packed where the workload takes W.
    weight = str(prepack.params[0].name)
    index = [t.op.name for t in inputs].index(weight)
    record = {"input": index, "shape": [int(d) for d in prepack.params[1].shape]}
    return tvm.IRModule({"main": main.with_attr("global_symbol", "main"),
                         "prepack": prepack.with_attr("global_symbol", "prepack")}), record


def export(lib, name, shape, args, curve, search_s, trace, prepack):
    """Writes DIR/<name>.so; returns its record."""
    lib.export_library(os.path.join(args.out, f"{name}.so"))
    return {
        "benchmark": name,
        "shape": shape,
        "trials": len(curve),
        "trials_asked": args.trials,
        "per_round": args.per_round,
        "seed": args.seed,
        "threads": args.threads,
        "search_s": round(search_s, 2),
        "trials_to_90": trials_to_reach(curve, 0.9),
        "tuned_gflops": round(curve[-1] if curve else 0.0, 3),
        "curve": [round(v, 3) for v in curve],
        "trace": trace,  # the schedule MetaSchedule chose, as its trace prints
        "prepack": prepack,  # {"input": i, "shape": [...]}: `prepack` packs input i, once; null: none
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tensorgym", default=os.path.join(here, "..", "..", "build", "bin", "tensorgym"))
    p.add_argument("--suite", default="ops-v0", choices=["ops-v0", "ops-heldout-v0"],
                   help="the dataset the benchmarks are from (ops-heldout-v0: the held-out shapes)")
    p.add_argument("--families", default="", help="comma-separated families (default: all ten, batch 1)")
    p.add_argument("--benchmarks", default="", help="comma-separated benchmark names instead, e.g. gmm-1,c2d-3")
    p.add_argument("--trials", type=int, default=64,
                   help="trial budget per benchmark; 0: no tuning, the workload as written (checks the workloads)")
    p.add_argument("--per-round", type=int, default=16, help="candidates measured per round")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if args.trials < 0 or args.per_round < 1 or args.threads < 1:
        sys.exit("tune.py: --trials must be 0 or more, --per-round and --threads at least 1")

    # Before TVM starts its thread pool, in this process and in the runner's.
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    sys.path.insert(0, here)
    import tvm
    import tvm_ffi
    from tvm.target import codegen

    shapes = benchmark_shapes(args.tensorgym, args.suite)
    names = select(args.suite, shapes, [f for f in args.families.split(",") if f], [b for b in args.benchmarks.split(",") if b])
    os.makedirs(args.out, exist_ok=True)
    target_config = {"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(), "num-cores": args.threads}
    target = tvm.target.Target(target_config)
    info = {
        "tvm": tvm.__version__,
        "tvm_ffi": tvm_ffi.__version__,
        "target": target_config,
        "libtvm_ffi": os.path.realpath(tvm_ffi.libinfo.find_libtvm_ffi()),
        "libtvm_runtime": os.path.realpath(os.path.join(os.path.dirname(tvm.__file__), "lib", "libtvm_runtime.so")),
    }
    with open(os.path.join(args.out, "tvm.json"), "w") as f:
        json.dump(info, f, indent=1)

    for i, name in enumerate(names):
        record_path = os.path.join(args.out, f"{name}.json")
        if os.path.exists(record_path) and os.path.exists(os.path.join(args.out, f"{name}.so")):
            with open(record_path) as f:
                old = json.load(f)
            same = all(old.get(k) == v for k, v in [("trials_asked", args.trials), ("per_round", args.per_round),
                                                     ("seed", args.seed), ("threads", args.threads)])
            if not same:
                sys.exit(f"tune.py: {record_path} was tuned with other settings; use another --out")
            print(f"[{i + 1}/{len(names)}] {name}: tuned earlier, skipped", flush=True)
            continue
        record = tune_one(name, shapes[name], benchmark_flops(args.tensorgym, args.suite, name), args, target)
        with open(record_path + ".tmp", "w") as f:
            json.dump(record, f, indent=1)
        os.replace(record_path + ".tmp", record_path)  # the record last: it marks the kernel complete
        print(f"[{i + 1}/{len(names)}] {name}: {record['tuned_gflops']} GFLOP/s during tuning, {record['trials']} trials, "
              f"{record['search_s']} s", flush=True)


if __name__ == "__main__":
    main()
