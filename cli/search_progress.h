// The progress display of `tensorgym search` and `tensorgym suite`: a bar redrawn in
// place on a terminal, plain lines otherwise (one per improvement and per tenth of
// the budget), both with the best-so-far GFLOP/s.
#pragma once

#include <cstdint>
#include <string>

#include "agents/search.h"

namespace tensorgym::cli {

// "12.34 GFLOP/s", or "12.34 est. GFLOP/s" for the est_cycles metric.
std::string gflops_text(double gflops, const std::string& metric);
// The best as people read it: its GFLOP/s, or for a program without float operations
// (int8 on the fpga target) its time ("399.2 us").
std::string best_text(double gflops, double cost, const std::string& metric);

class ProgressDisplay {
 public:
  // `label` prefixes every line (the benchmark in a suite; empty for a search). The bar
  // fills with whichever budget is nearer its end: trials, or `time_budget_s` (> 0).
  ProgressDisplay(std::string metric, bool quiet, std::string label = "", double time_budget_s = 0);
  void update(const SearchProgress& p);
  void finish();  // ends the redrawn line

 private:
  std::string metric_;
  bool quiet_;
  std::string label_;
  double time_budget_s_;
  bool tty_;
  bool drawn_ = false;
  int64_t last_best_trial_ = -1;
  int64_t last_decile_ = -1;
  double fraction(const SearchProgress& p) const;
};

}  // namespace tensorgym::cli
