#include "cli/metaschedule_results.h"

#include <fmt/format.h>

#include <filesystem>

#include "cli/cli_common.h"
#include "cli/json_text.h"

namespace tensorgym::cli {
namespace {

Expected<Json> read_json(const std::string& path) {
  Expected<std::string> text = read_text_file(path);
  if (!text.ok()) return text.status();
  Json j = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument(path + " is not a JSON object");
  return j;
}

}  // namespace

Expected<MetaScheduleResults> read_metaschedule_results(const std::string& dir, const std::vector<std::string>& names,
                                                        const std::string& suite) {
  namespace fs = std::filesystem;
  MetaScheduleResults r;
  r.dir = dir;
  const std::string tvm_json = (fs::path(dir) / "tvm.json").string();
  std::error_code ec;
  if (!fs::is_regular_file(tvm_json, ec))
    return not_found(fmt::format("--metaschedule {}: no tvm.json there; tune with benchmarks/metaschedule/tune.py --out {}",
                                 dir, dir));
  Expected<Json> t = read_json(tvm_json);
  if (!t.ok()) return t.status();
  if (!t->contains("libtvm_ffi") || !t->contains("libtvm_runtime") || !(*t)["libtvm_ffi"].is_string() ||
      !(*t)["libtvm_runtime"].is_string())
    return invalid_argument(tvm_json + " does not name libtvm_ffi and libtvm_runtime");
  r.libs = {(*t)["libtvm_ffi"].get<std::string>(), (*t)["libtvm_runtime"].get<std::string>()};
  for (const std::string& lib : {r.libs.ffi, r.libs.runtime})
    if (!fs::is_regular_file(lib, ec))
      return not_found(fmt::format("{} names {}, which does not exist (was the TVM environment moved or removed?)",
                                   tvm_json, lib));
  r.tvm_version = t->value("tvm", std::string("?"));

  std::vector<std::string> missing;
  for (const std::string& name : names) {
    const fs::path so = fs::path(dir) / (name + ".so"), record = fs::path(dir) / (name + ".json");
    if (!fs::is_regular_file(so, ec) || !fs::is_regular_file(record, ec)) {
      missing.push_back(name);
      continue;
    }
    Expected<Json> j = read_json(record.string());
    if (!j.ok()) return j.status();
    MetaScheduleRecord m;
    m.module_path = so.string();
    try {
      m.trials = j->at("trials").get<int64_t>();
      m.search_s = j->at("search_s").get<double>();
      m.trials_to_90 = j->at("trials_to_90").get<int64_t>();
      m.tuned_gflops = j->at("tuned_gflops").get<double>();
      if (j->contains("prepack") && !(*j)["prepack"].is_null()) {
        const Json& p = (*j)["prepack"];
        m.prepack.input = p.at("input").get<int>();
        m.prepack.shape = p.at("shape").get<std::vector<int64_t>>();
        if (m.prepack.input < 0) return invalid_argument(record.string() + ": prepack's input is negative");
      }
    } catch (const Json::exception& e) {
      return invalid_argument(fmt::format("{}: {}", record.string(), e.what()));
    }
    r.records[name] = m;
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ",") + m;
    return not_found(fmt::format("--metaschedule {}: no tuned kernel for {}; tune them with "
                                 "benchmarks/metaschedule/tune.py {}--benchmarks {} --out {}",
                                 dir, list, suite == "ops-v0" ? "" : "--suite " + suite + " ", list, dir));
  }
  return r;
}

int64_t trials_to_reach(const std::vector<double>& curve, double fraction) {
  if (curve.empty() || !(curve.back() > 0)) return 0;
  for (size_t i = 0; i < curve.size(); ++i)
    if (curve[i] >= fraction * curve.back()) return int64_t(i) + 1;
  return int64_t(curve.size());
}

}  // namespace tensorgym::cli
