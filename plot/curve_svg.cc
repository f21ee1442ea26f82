#include "plot/curve_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "plot/svg_escape.h"

namespace tensorgym {

std::string best_so_far_svg(const std::vector<PlotSeries>& series, const std::string& title,
                            const std::string& y_label) {
  const double width = 720, height = 420, left = 70, right = 20, top = 40, bottom = 50;
  const double pw = width - left - right, ph = height - top - bottom;
  size_t n = 1;
  double ymax = 0;
  for (const PlotSeries& s : series) {
    n = std::max(n, s.values.size());
    for (double v : s.values)
      if (std::isfinite(v)) ymax = std::max(ymax, v);
  }
  if (ymax <= 0) ymax = 1;
  // A round upper bound: 1, 2 or 5 times a power of ten.
  double step = std::pow(10.0, std::floor(std::log10(ymax)));
  double top_value = step;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * step >= ymax) {
      top_value = m * step;
      break;
    }
  }
  auto x_of = [&](double trial) { return left + pw * (n <= 1 ? 0.0 : (trial - 1) / double(n - 1)); };
  auto y_of = [&](double v) { return top + ph * (1 - v / top_value); };
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" << svg_escape(title)
    << "</text>\n";
  // Axes and ticks.
  o << "<line x1=\"" << left << "\" y1=\"" << top + ph << "\" x2=\"" << left + pw << "\" y2=\"" << top + ph
    << "\" stroke=\"black\"/>\n";
  o << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << top + ph
    << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    double v = top_value * i / 5;
    double y = y_of(v);
    o << "<line x1=\"" << left - 4 << "\" y1=\"" << y << "\" x2=\"" << left + pw << "\" y2=\"" << y
      << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << left - 8 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << v << "</text>\n";
  }
  for (int i = 0; i <= 5; ++i) {
    double trial = 1 + double(n - 1) * i / 5;
    double x = x_of(trial);
    o << "<line x1=\"" << x << "\" y1=\"" << top + ph << "\" x2=\"" << x << "\" y2=\"" << top + ph + 4
      << "\" stroke=\"black\"/>\n";
    o << "<text x=\"" << x << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">" << int64_t(std::llround(trial))
      << "</text>\n";
  }
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 10 << "\" text-anchor=\"middle\">trials</text>\n";
  o << "<text x=\"16\" y=\"" << top + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << top + ph / 2
    << ")\">" << svg_escape(y_label) << "</text>\n";
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    const char* color = kColors[k % 6];
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < s.values.size(); ++i) {
      double v = std::isfinite(s.values[i]) ? s.values[i] : 0;
      o << x_of(double(i + 1)) << "," << y_of(v) << (i + 1 < s.values.size() ? " " : "");
    }
    o << "\"/>\n";
    double ly = top + 16 + 16 * double(k);
    o << "<line x1=\"" << left + pw - 170 << "\" y1=\"" << ly - 4 << "\" x2=\"" << left + pw - 150 << "\" y2=\""
      << ly - 4 << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>\n";
    o << "<text x=\"" << left + pw - 145 << "\" y=\"" << ly << "\">" << svg_escape(s.label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace tensorgym
