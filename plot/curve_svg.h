// An SVG line chart of best-so-far figures against trials, one line per series: what
// `tensorgym search --plot` and benchmarks/search_benchmark draw.
#pragma once

#include <string>
#include <vector>

namespace tensorgym {

struct PlotSeries {
  std::string label;
  std::vector<double> values;  // y per trial, trial 1 first
};

std::string best_so_far_svg(const std::vector<PlotSeries>& series, const std::string& title,
                            const std::string& y_label = "best GFLOP/s");

}  // namespace tensorgym
