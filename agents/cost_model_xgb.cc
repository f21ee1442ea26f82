#include "agents/cost_model_xgb.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>

namespace tensorgym {
namespace {

Status xgb_error(const std::string& what) { return internal_error("XGBoost " + what + ": " + XGBGetLastError()); }

void quiet_xgboost() {
  static std::once_flag once;
  std::call_once(once, [] { (void)XGBSetGlobalConfig("{\"verbosity\": 0}"); });
}

// A DMatrix freed when it goes out of scope.
struct DMatrix {
  DMatrixHandle h = nullptr;
  ~DMatrix() {
    if (h) XGDMatrixFree(h);
  }
};

Status make_dmatrix(const std::vector<const std::vector<StoreFeatureRow>*>& programs, DMatrix* out,
                    std::vector<size_t>* row_program) {
  std::vector<float> data;
  for (size_t p = 0; p < programs.size(); ++p) {
    for (const StoreFeatureRow& row : *programs[p]) {
      data.insert(data.end(), row.begin(), row.end());
      row_program->push_back(p);
    }
  }
  bst_ulong rows = bst_ulong(row_program->size());
  if (XGDMatrixCreateFromMat(data.data(), rows, bst_ulong(kFeaturesPerStore), std::numeric_limits<float>::quiet_NaN(),
                             &out->h) != 0)
    return xgb_error("DMatrix");
  return Status();
}

}  // namespace

XgbCostModel::XgbCostModel(XgbCostModelOptions options) : options_(options) { quiet_xgboost(); }

XgbCostModel::~XgbCostModel() {
  if (booster_) XGBoosterFree(booster_);
}

Status XgbCostModel::set_params(void* booster) const {
  auto set = [&](const char* k, const std::string& v) -> Status {
    if (XGBoosterSetParam(booster, k, v.c_str()) != 0) return xgb_error(std::string("parameter ") + k);
    return Status();
  };
  TG_RETURN_IF_ERROR(set("nthread", std::to_string(std::max(1, options_.threads))));
  TG_RETURN_IF_ERROR(set("verbosity", "0"));
  return Status();
}

Status XgbCostModel::train(const std::vector<CostSample>& samples) {
  double best = std::numeric_limits<double>::infinity();
  int valid = 0;
  for (const CostSample& s : samples) {
    if (s.valid && !s.rows.empty() && s.cost > 0 && std::isfinite(s.cost)) {
      best = std::min(best, s.cost);
      ++valid;
    }
  }
  if (valid < 2) return failed_precondition("the cost model needs at least two valid samples to train");

  std::vector<const std::vector<StoreFeatureRow>*> programs;
  std::vector<double> label;
  for (const CostSample& s : samples) {
    if (s.rows.empty()) continue;
    programs.push_back(&s.rows);
    bool ok = s.valid && s.cost > 0 && std::isfinite(s.cost);
    label.push_back(ok ? best / s.cost : 0.0);
  }
  DMatrix dtrain;
  std::vector<size_t> row_program;
  TG_RETURN_IF_ERROR(make_dmatrix(programs, &dtrain, &row_program));

  BoosterHandle booster = nullptr;
  if (XGBoosterCreate(&dtrain.h, 1, &booster) != 0) return xgb_error("booster");
  auto fail = [&](const Status& st) {
    XGBoosterFree(booster);
    return st;
  };
  auto set = [&](const char* k, const std::string& v) -> Status {
    if (XGBoosterSetParam(booster, k, v.c_str()) != 0) return xgb_error(std::string("parameter ") + k);
    return Status();
  };
  for (auto [k, v] : std::vector<std::pair<const char*, std::string>>{
           {"tree_method", "hist"},
           {"max_depth", std::to_string(options_.max_depth)},
           {"eta", std::to_string(options_.eta)},
           {"gamma", std::to_string(options_.gamma)},
           {"min_child_weight", std::to_string(options_.min_child_weight)},
           {"seed", std::to_string(options_.seed)},
           {"base_score", "0"},
           {"disable_default_eval_metric", "1"}}) {
    Status st = set(k, v);
    if (!st.ok()) return fail(st);
  }
  Status st = set_params(booster);
  if (!st.ok()) return fail(st);

  const size_t n_rows = row_program.size();
  std::vector<float> grad(n_rows), hess(n_rows);
  std::vector<double> program_sum(programs.size());
  for (int round = 0; round < options_.rounds; ++round) {
    bst_ulong len = 0;
    const float* margin = nullptr;
    if (XGBoosterPredict(booster, dtrain.h, /*option_mask=*/1, 0, /*training=*/1, &len, &margin) != 0 ||
        len != n_rows)
      return fail(xgb_error("predict while training"));
    // Pack-sum squared error: a program's prediction is the sum over its rows; every
    // row gets the program's residual, weighted by its normalized throughput.
    std::fill(program_sum.begin(), program_sum.end(), 0.0);
    for (size_t i = 0; i < n_rows; ++i) program_sum[row_program[i]] += double(margin[i]);
    for (size_t i = 0; i < n_rows; ++i) {
      size_t p = row_program[i];
      double w = std::max(label[p], kMinSampleWeight);
      grad[i] = float((program_sum[p] - label[p]) * w);
      hess[i] = float(w);
    }
    if (XGBoosterBoostOneIter(booster, dtrain.h, grad.data(), hess.data(), bst_ulong(n_rows)) != 0)
      return fail(xgb_error("boosting"));
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = booster;
  return Status();
}

Expected<std::vector<double>> XgbCostModel::predict(
    const std::vector<const std::vector<StoreFeatureRow>*>& programs) const {
  std::vector<double> out(programs.size(), 0.0);
  for (size_t p = 0; p < programs.size(); ++p)
    if (programs[p]->empty()) out[p] = -std::numeric_limits<double>::infinity();
  if (!booster_ || programs.empty()) return out;
  DMatrix d;
  std::vector<size_t> row_program;
  TG_RETURN_IF_ERROR(make_dmatrix(programs, &d, &row_program));
  if (row_program.empty()) return out;
  bst_ulong len = 0;
  const float* preds = nullptr;
  if (XGBoosterPredict(booster_, d.h, /*option_mask=*/1, 0, /*training=*/0, &len, &preds) != 0 ||
      len != row_program.size())
    return xgb_error("predict");
  for (size_t i = 0; i < row_program.size(); ++i) out[row_program[i]] += double(preds[i]);
  return out;
}

Expected<std::vector<double>> XgbCostModel::predict(const std::vector<std::vector<StoreFeatureRow>>& programs) const {
  std::vector<const std::vector<StoreFeatureRow>*> ptrs;
  for (const auto& p : programs) ptrs.push_back(&p);
  return predict(ptrs);
}

Expected<std::string> XgbCostModel::save() const {
  if (!booster_) return std::string();
  bst_ulong len = 0;
  const char* data = nullptr;
  if (XGBoosterSaveModelToBuffer(booster_, "{\"format\": \"ubj\"}", &len, &data) != 0) return xgb_error("save");
  return std::string(data, size_t(len));
}

Status XgbCostModel::load(const std::string& bytes) {
  if (bytes.empty()) {
    if (booster_) XGBoosterFree(booster_);
    booster_ = nullptr;
    return Status();
  }
  BoosterHandle booster = nullptr;
  if (XGBoosterCreate(nullptr, 0, &booster) != 0) return xgb_error("booster");
  if (XGBoosterLoadModelFromBuffer(booster, bytes.data(), bst_ulong(bytes.size())) != 0) {
    Status st = xgb_error("load");
    XGBoosterFree(booster);
    return invalid_argument("not a cost model: " + st.message());
  }
  Status st = set_params(booster);
  if (!st.ok()) {
    XGBoosterFree(booster);
    return st;
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = booster;
  return Status();
}

Status XgbCostModel::save_file(const std::string& path) const {
  TG_ASSIGN_OR_RETURN(std::string bytes, save());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) return failed_precondition("cannot write cost model " + path);
  return Status();
}

Status XgbCostModel::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read cost model " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  Status st = load(ss.str());
  if (!st.ok()) return Status(st.code(), path + ": " + st.message());
  return Status();
}

RankingQuality ranking_quality(const std::vector<double>& scores, const std::vector<double>& costs,
                               const std::vector<bool>& valid, int k) {
  RankingQuality q;
  std::vector<size_t> idx;
  for (size_t i = 0; i < scores.size() && i < costs.size(); ++i)
    if (i < valid.size() && valid[i] && std::isfinite(costs[i])) idx.push_back(i);
  q.samples = idx.size();
  double correct = 0;
  for (size_t a = 0; a < idx.size(); ++a) {
    for (size_t b = a + 1; b < idx.size(); ++b) {
      size_t i = idx[a], j = idx[b];
      if (costs[i] == costs[j]) continue;
      ++q.pairs;
      if (scores[i] == scores[j]) {
        correct += 0.5;
      } else if ((scores[i] > scores[j]) == (costs[i] < costs[j])) {
        correct += 1;
      }
    }
  }
  q.pairwise_accuracy = q.pairs ? correct / double(q.pairs) : 0;
  q.k = int(std::min<size_t>(size_t(std::max(k, 0)), idx.size()));
  if (q.k > 0) {
    std::vector<size_t> by_cost = idx, by_score = idx;
    std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) { return costs[a] < costs[b]; });
    std::stable_sort(by_score.begin(), by_score.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::set<size_t> top(by_cost.begin(), by_cost.begin() + q.k);
    int hit = 0;
    for (int i = 0; i < q.k; ++i) hit += int(top.count(by_score[size_t(i)]));
    q.top_k_recall = double(hit) / double(q.k);
  }
  return q;
}

}  // namespace tensorgym
