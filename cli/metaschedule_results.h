// What benchmarks/metaschedule/tune.py leaves in its output directory, read by
// `tensorgym suite --metaschedule DIR`, which times each kernel side by side with ours:
//
//   DIR/tvm.json      {"tvm": version, "tvm_ffi": version, "target": {...},
//                      "libtvm_ffi": path, "libtvm_runtime": path}
//   DIR/<name>.so     the tuned kernel of ops-v0/<name>, exported by TVM
//   DIR/<name>.json   {"benchmark": name, "trials": N, "search_s": S, "trials_to_90": T,
//                      "tuned_gflops": G, "curve": [...],  (MetaSchedule's own measurements)
//                      "prepack": {"input": I, "shape": [...]} or null}  (the .so's
//                      `prepack` packs input I once; its `main` takes the packed copy)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "benchmarks/baselines/tvm_kernel.h"
#include "support/status.h"

namespace tensorgym::cli {

struct MetaScheduleRecord {
  std::string module_path;  // DIR/<name>.so
  int64_t trials = 0;
  double search_s = 0;
  int64_t trials_to_90 = 0;
  double tuned_gflops = 0;  // the best during tuning, as MetaSchedule measured it
  TvmPrepack prepack;       // input -1: none
};

struct MetaScheduleResults {
  std::string dir;
  TvmLibraries libs;
  std::string tvm_version;
  std::map<std::string, MetaScheduleRecord> records;  // by benchmark name ("gmm-1")
};

// Reads DIR/tvm.json and the record of each of `names`. NOT_FOUND names the benchmarks
// without a tuned kernel (and the command that tunes them); INVALID_ARGUMENT a file
// that is not what tune.py writes.
Expected<MetaScheduleResults> read_metaschedule_results(const std::string& dir, const std::vector<std::string>& names,
                                                        const std::string& suite = "ops-v0");

// The first trial (1-based) whose best-so-far reaches `fraction` of the final best of
// `curve` (best-so-far throughput after each trial); 0 when the curve never rises above 0.
int64_t trials_to_reach(const std::vector<double>& curve, double fraction);

}  // namespace tensorgym::cli
