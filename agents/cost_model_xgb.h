// A learned cost model on the `features` observation (per-store features, Ansor
// layout): gradient-boosted trees through XGBoost's C API, as in Ansor.
//
// Each program is a set of per-store feature rows; the model predicts a score per row
// and a program's score is the sum over its rows. It is trained on normalized
// throughputs (the best cost among the samples divided by the program's cost, 0 for a
// failed program) with Ansor's "pack-sum" squared error weighted by the throughput,
// so the ranking among good programs counts most (weights are floored at
// kMinSampleWeight, so failed and slow programs still say something). Training always
// starts from scratch; with one thread it is deterministic, and a model saved and
// loaded predicts bit-identically.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/analysis/features.h"
#include "support/status.h"

namespace tensorgym {

struct CostSample {
  std::vector<StoreFeatureRow> rows;  // extract_features(nest).rows
  double cost = 0;                    // lower is better
  bool valid = false;                 // false: the program failed (its label is 0)
};

struct XgbCostModelOptions {
  int rounds = 60;  // boosting rounds
  int max_depth = 10;
  double eta = 0.2;
  double gamma = 0.001;
  double min_child_weight = 0;
  uint64_t seed = 43;
  int threads = 1;  // XGBoost threads; 1 keeps training bit-reproducible
};

inline constexpr double kMinSampleWeight = 0.05;

class XgbCostModel {
 public:
  explicit XgbCostModel(XgbCostModelOptions options = {});
  ~XgbCostModel();
  XgbCostModel(const XgbCostModel&) = delete;
  XgbCostModel& operator=(const XgbCostModel&) = delete;

  // Trains a new model on the samples (replacing the current one). Needs at least two
  // valid samples with rows; FAILED_PRECONDITION otherwise.
  Status train(const std::vector<CostSample>& samples);
  bool trained() const { return booster_ != nullptr; }

  // One score per program, higher = predicted faster. A program without rows scores
  // -infinity. Before training every score is 0.
  Expected<std::vector<double>> predict(const std::vector<const std::vector<StoreFeatureRow>*>& programs) const;
  Expected<std::vector<double>> predict(const std::vector<std::vector<StoreFeatureRow>>& programs) const;

  // The model as bytes (XGBoost's UBJSON model format) and back; an empty string is an
  // untrained model.
  Expected<std::string> save() const;
  Status load(const std::string& bytes);
  Status save_file(const std::string& path) const;
  Status load_file(const std::string& path);

  const XgbCostModelOptions& options() const { return options_; }

 private:
  Status set_params(void* booster) const;

  XgbCostModelOptions options_;
  void* booster_ = nullptr;  // BoosterHandle
};

// How well scores rank programs against their true costs.
struct RankingQuality {
  double pairwise_accuracy = 0;  // over pairs of valid samples with different costs (score ties count half)
  double top_k_recall = 0;       // |true top-k ∩ predicted top-k| / k
  int k = 0;
  int64_t pairs = 0;
  size_t samples = 0;  // valid samples compared
};
// scores: higher = predicted faster; costs: lower = faster; invalid samples are skipped.
RankingQuality ranking_quality(const std::vector<double>& scores, const std::vector<double>& costs,
                               const std::vector<bool>& valid, int k);

}  // namespace tensorgym
