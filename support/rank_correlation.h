// Rank statistics for judging a model against measurements: Spearman's rank
// correlation (the Pearson correlation of average ranks, ties sharing their mean).
#pragma once

#include <vector>

namespace tensorgym {

// Average ranks (1-based), ties sharing the mean of their positions.
std::vector<double> average_ranks(const std::vector<double>& v);
// Pearson's correlation of x and y (same length); 0 when either is constant.
double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y);
// Spearman's rank correlation of x and y.
double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace tensorgym
