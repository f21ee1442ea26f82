#include "benchmarks/baselines/kernel_comparison.h"

#include <fmt/format.h>

#include "benchmarks/baselines/vendor_baselines.h"
#include "codegen/backend/registry.h"

namespace tensorgym {

const ComparedKernel* KernelComparison::expert() const {
  for (const ComparedKernel& k : others)
    if (k.role == "expert") return &k;
  return nullptr;
}

const ComparedKernel* KernelComparison::peer(const std::string& name) const {
  for (const ComparedKernel& k : others)
    if (k.role == "peer" && k.name == name) return &k;
  return nullptr;
}

const ComparedKernel* KernelComparison::fastest_vendor() const {
  const ComparedKernel* best = nullptr;
  for (const ComparedKernel& k : others)
    if (k.role == "vendor" && (!best || k.gflops > best->gflops)) best = &k;
  return best;
}

namespace {

// A peer's kernel with output buffers of its own, shaped like ours', and the packed
// copy of an input when it takes one.
struct LoadedPeer {
  std::unique_ptr<TvmKernel> kernel;
  std::unique_ptr<HostBuffer> packed;
  std::vector<HostBuffer> outputs;
};

Expected<LoadedPeer> load_peer(const CompareOptions::Peer& p, CompiledSchedule& ours, int threads) {
  auto fail = [&](const Status& s) { return Status(s.code(), p.name + " (" + p.module_path + "): " + s.message()); };
  LoadedPeer lp;
  Expected<std::unique_ptr<TvmKernel>> k = TvmKernel::load(p.libs, p.module_path, threads);
  if (!k.ok()) return fail(k.status());
  lp.kernel = std::move(*k);
  std::vector<HostBuffer*> buffers;
  for (HostBuffer& in : ours.inputs) buffers.push_back(&in);
  if (p.prepack.input >= 0) {
    // The pack runs once, here; the kernel's runs read the packed copy.
    if (size_t(p.prepack.input) >= ours.inputs.size())
      return fail(invalid_argument(fmt::format("its prepack packs input {}, but the benchmark has {} inputs",
                                               p.prepack.input, ours.inputs.size())));
    Expected<std::unique_ptr<TvmKernel>> pack = TvmKernel::load(p.libs, p.module_path, threads, p.prepack.function);
    if (!pack.ok()) return fail(pack.status());
    HostBuffer& input = ours.inputs[size_t(p.prepack.input)];
    lp.packed = std::make_unique<HostBuffer>(input.dtype(), p.prepack.shape);  // TVM checks the shape
    Status s = (*pack)->bind({&input, lp.packed.get()});
    if (!s.ok()) return fail(s);
    buffers[size_t(p.prepack.input)] = lp.packed.get();
  }
  for (const HostBuffer& o : ours.outputs) lp.outputs.emplace_back(o.dtype(), o.shape());
  for (HostBuffer& out : lp.outputs) buffers.push_back(&out);
  Status s = lp.kernel->bind(buffers);  // its first run
  if (!s.ok()) return fail(s);
  return lp;
}

}  // namespace

Expected<KernelComparison> compare_kernels(const Benchmark& benchmark, const std::string& trace,
                                           const CompareOptions& options) {
  const int threads = options.threads > 0 ? options.threads : std::max(1, host_backend().target().num_cores);
  Expected<CompiledSchedule> ours = compile_schedule(benchmark.program, trace);
  if (!ours.ok()) return Status(ours.status().code(), benchmark.uri + ": " + ours.status().message());

  std::vector<Contender> contenders = {{"ours", [&] { ours->run(threads); }}};
  std::vector<ComparedKernel> others;
  std::unique_ptr<CompiledSchedule> expert;
  if (options.with_expert && !benchmark.expert_schedule.empty()) {
    Expected<CompiledSchedule> e = compile_schedule(benchmark.program, benchmark.expert_schedule);
    if (!e.ok()) return Status(e.status().code(), benchmark.uri + " (expert schedule): " + e.status().message());
    expert = std::make_unique<CompiledSchedule>(std::move(*e));
    contenders.push_back({"expert", [&] { expert->run(threads); }});
    others.push_back({"expert", "expert"});
  }
  std::vector<VendorKernel> vendors;
  if (options.with_vendors) {
    Expected<std::vector<VendorKernel>> v = vendor_kernels(benchmark, *ours, threads);
    if (!v.ok()) return v.status();
    vendors = std::move(*v);
  }
  for (const VendorKernel& v : vendors) {
    contenders.push_back({v.name, v.run});
    others.push_back({v.name, "vendor"});
  }
  std::vector<LoadedPeer> peers;
  for (const CompareOptions::Peer& p : options.peers) {
    Expected<LoadedPeer> lp = load_peer(p, *ours, threads);
    if (!lp.ok()) return Status(lp.status().code(), benchmark.uri + ": " + lp.status().message());
    peers.push_back(std::move(*lp));
    TvmKernel* k = peers.back().kernel.get();
    contenders.push_back({p.name, [k] { k->run(); }});
    others.push_back({p.name, "peer"});
  }

  // One run each, then the outputs: same inputs (the expert's are drawn with the same
  // seed), so every contender must agree with ours.
  ours->run(threads);
  if (expert) {
    expert->run(threads);
    for (size_t i = 0; i < ours->outputs.size(); ++i)
      others[0].max_rel_error = std::max(others[0].max_rel_error, max_relative_error(expert->outputs[i], ours->outputs[i]));
  }
  const size_t first_vendor = expert ? 1 : 0;
  for (size_t i = 0; i < vendors.size(); ++i) {
    vendors[i].run();
    const HostBuffer* mine = ours->output(vendors[i].output);
    if (!mine) return internal_error(benchmark.uri + ": no output " + vendors[i].output + " to compare " + vendors[i].name + " with");
    double err = max_relative_error(vendors[i].result(), *mine);
    others[first_vendor + i].max_rel_error = err;
    if (!(err <= options.tolerance)) {
      return internal_error(fmt::format("{}: {}'s output differs from ours by {:.3g} (relative), over {:.3g}",
                                        benchmark.uri, vendors[i].name, err, options.tolerance));
    }
  }

  const size_t first_peer = first_vendor + vendors.size();
  for (size_t i = 0; i < peers.size(); ++i) {
    double err = 0;
    for (size_t j = 0; j < ours->outputs.size(); ++j)
      err = std::max(err, max_relative_error(peers[i].outputs[j], ours->outputs[j]));
    others[first_peer + i].max_rel_error = err;
    if (!(err <= options.tolerance)) {
      return internal_error(fmt::format("{}: {}'s output ({}) differs from ours by {:.3g} (relative), over {:.3g}",
                                        benchmark.uri, options.peers[i].name, options.peers[i].module_path, err,
                                        options.tolerance));
    }
  }

  Expected<SideBySide> t = time_side_by_side(contenders, options.timing);
  if (!t.ok()) return Status(t.status().code(), benchmark.uri + ": " + t.status().message());
  for (size_t i = 0; i < peers.size(); ++i)
    if (!peers[i].kernel->error().ok())
      return Status(peers[i].kernel->error().code(), benchmark.uri + ": " + options.peers[i].name + ": " +
                                                         peers[i].kernel->error().message());
  KernelComparison c;
  c.flops = ours->flops;
  c.threads = threads;
  c.rounds = options.timing.rounds;
  c.ours_gflops = c.flops / t->median_s[0] / 1e9;
  for (size_t i = 0; i < others.size(); ++i) {
    others[i].gflops = c.flops / t->median_s[i + 1] / 1e9;
    others[i].speedup = t->speedup_of_first[i + 1];
  }
  c.others = std::move(others);
  return c;
}

}  // namespace tensorgym
