#include "client/cli/search_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tensorgym::cli {

std::string gflops_text(double g, const std::string& metric) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s", g, metric == "est_cycles" ? "est. GFLOP/s" : "GFLOP/s");
  return buf;
}

ProgressDisplay::ProgressDisplay(std::string metric, bool quiet, std::string label)
    : metric_(std::move(metric)), quiet_(quiet), label_(label.empty() ? "" : label + ": "), tty_(isatty(2)) {}

void ProgressDisplay::update(const SearchProgress& p) {
  if (quiet_) return;
  const std::string best = p.has_best ? gflops_text(p.best_gflops, metric_) : "-";
  if (tty_) {
    const int width = 30;
    int filled = p.max_trials > 0 ? int(double(width) * double(p.trials) / double(p.max_trials)) : 0;
    std::string bar(size_t(std::clamp(filled, 0, width)), '#');
    bar.resize(size_t(width), '.');
    char buf[320];
    std::snprintf(buf, sizeof buf, "\r%s[%s] %lld/%lld trials  best %s (trial %lld)  failed %lld  %.1f s ",
                  label_.c_str(), bar.c_str(), (long long)p.trials, (long long)p.max_trials, best.c_str(),
                  (long long)p.best_trial, (long long)p.failed_trials, p.elapsed_s);
    std::fputs(buf, stderr);
    std::fflush(stderr);
    drawn_ = true;
    return;
  }
  const bool improved = p.has_best && p.best_trial != last_best_trial_;
  const int64_t decile = p.max_trials > 0 ? p.trials * 10 / p.max_trials : p.trials / 100;
  if (improved || decile != last_decile_) {
    std::fprintf(stderr, "%strial %lld: best %s (trial %lld), %lld failed, %.1f s\n", label_.c_str(),
                 (long long)p.trials, best.c_str(), (long long)p.best_trial, (long long)p.failed_trials, p.elapsed_s);
    last_best_trial_ = p.best_trial;
    last_decile_ = decile;
  }
}

void ProgressDisplay::finish() {
  if (drawn_) std::fputs("\n", stderr);
  drawn_ = false;
}

}  // namespace tensorgym::cli
