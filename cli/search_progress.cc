#include "cli/search_progress.h"

#include "cli/figures.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>


namespace tensorgym::cli {

std::string gflops_text(double g, const std::string& metric) {
  return fmt::format("{:.2f} {}", g, metric == "runtime" ? "GFLOP/s" : "est. GFLOP/s");
}

std::string best_text(double gflops, double cost, const std::string& metric) {
  if (gflops > 0 || metric == "est_cycles") return gflops_text(gflops, metric);
  return seconds_text(cost) + (metric == "runtime" ? "" : " est.");  // no float operations: the time
}

ProgressDisplay::ProgressDisplay(std::string metric, bool quiet, std::string label, double time_budget_s)
    : metric_(std::move(metric)),
      quiet_(quiet),
      label_(label.empty() ? "" : label + ": "),
      time_budget_s_(time_budget_s),
      tty_(isatty(2)) {}

double ProgressDisplay::fraction(const SearchProgress& p) const {
  double f = p.max_trials > 0 ? double(p.trials) / double(p.max_trials) : 0;
  if (time_budget_s_ > 0) f = std::max(f, p.elapsed_s / time_budget_s_);
  return std::clamp(f, 0.0, 1.0);
}

void ProgressDisplay::update(const SearchProgress& p) {
  if (quiet_) return;
  const std::string best = p.has_best ? best_text(p.best_gflops, p.best_cost, metric_) : "-";
  if (tty_) {
    const int width = 30;
    std::string bar(size_t(double(width) * fraction(p)), '#');
    bar.resize(size_t(width), '.');
    const std::string trials =
        p.max_trials > 0 ? fmt::format("{}/{}", p.trials, p.max_trials) : std::to_string(p.trials);
    const std::string seconds = time_budget_s_ > 0 ? fmt::format("{:.0f}/{:.0f} s", p.elapsed_s, time_budget_s_)
                                                   : fmt::format("{:.1f} s", p.elapsed_s);
    fmt::print(stderr, "\r{}[{}] {} trials  best {} (trial {})  failed {}  {} ", label_, bar, trials, best,
               p.best_trial, p.failed_trials, seconds);
    std::fflush(stderr);
    drawn_ = true;
    return;
  }
  const bool improved = p.has_best && p.best_trial != last_best_trial_;
  const int64_t decile = p.max_trials > 0 || time_budget_s_ > 0 ? int64_t(fraction(p) * 10) : p.trials / 100;
  if (improved || decile != last_decile_) {
    fmt::print(stderr, "{}trial {}: best {} (trial {}), {} failed, {:.1f} s\n", label_, p.trials, best, p.best_trial,
               p.failed_trials, p.elapsed_s);
    last_best_trial_ = p.best_trial;
    last_decile_ = decile;
  }
}

void ProgressDisplay::finish() {
  if (drawn_) std::fputs("\n", stderr);
  drawn_ = false;
}

}  // namespace tensorgym::cli
