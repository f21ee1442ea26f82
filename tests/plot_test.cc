// The SVG pictures the command line writes (plot/): text is escaped, every series is
// drawn, and the chart's scale holds its largest value.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "plot/curve_svg.h"
#include "plot/plan_svg.h"
#include "plot/svg_escape.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST(SvgEscape, EscapesMarkupAndKeepsTheRest) {
  EXPECT_EQ(svg_escape("a<b> & \"c\""), "a&lt;b&gt; &amp; &quot;c&quot;");
  EXPECT_EQ(svg_escape("gmm-1: 3.5 GFLOP/s"), "gmm-1: 3.5 GFLOP/s");
  EXPECT_EQ(svg_escape(""), "");
}

TEST(CurveSvg, OneLinePerSeriesWithEscapedLabels) {
  const std::string svg = best_so_far_svg({{"random <seed 1>", {1, 2, 2, 4}}, {"beam & co", {3, 3, 5}}}, "gmm-1 \"A\"");
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_CONTAINS(svg, "</svg>");
  EXPECT_EQ(count_of(svg, "<polyline"), 2u);
  EXPECT_CONTAINS(svg, "random &lt;seed 1&gt;");
  EXPECT_CONTAINS(svg, "beam &amp; co");
  EXPECT_CONTAINS(svg, "gmm-1 &quot;A&quot;");
  EXPECT_EQ(svg.find("<seed"), std::string::npos);
  EXPECT_CONTAINS(svg, ">best GFLOP/s</text>");
}

// The y axis tops out at 1, 2 or 5 times a power of ten at or above the largest value;
// values that are not finite are drawn at zero, not as NaN coordinates.
TEST(CurveSvg, TheScaleRoundsUpAndNonFiniteValuesStayOnTheChart) {
  const std::string svg = best_so_far_svg({{"s", {0.5, 37.0, std::numeric_limits<double>::quiet_NaN()}}}, "t",
                                          "best est. GFLOP/s");
  EXPECT_CONTAINS(svg, ">50.0</text>");
  EXPECT_EQ(svg.find(">100.0</text>"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_CONTAINS(svg, ">best est. GFLOP/s</text>");
}

TEST(PlanSvg, NamesEachBufferAndTheSizesInReadableUnits) {
  Instance inst;
  inst.buffers = {{"a", 0, 4, 2048}, {"b", 2, 6, 3 << 20}};
  const std::string svg = plan_svg(inst, {0, 2048}, 1536, "plan <1>");
  EXPECT_CONTAINS(svg, "plan &lt;1&gt;: arena 3.00 MiB, lower bound 1.5 KiB, ratio 2049.3333</text>");
  EXPECT_CONTAINS(svg, "<title>a [0, 4) @0 +2048</title>");
  EXPECT_CONTAINS(svg, "<title>b [2, 6) @2048 +3145728</title>");
  EXPECT_CONTAINS(svg, "time (steps 0 to 6)");
  EXPECT_EQ(count_of(svg, "<title>"), 2u);
  EXPECT_CONTAINS(plan_svg(inst, {0, 2048}, 0, "p"), "lower bound 0 B, ratio n/a");
}

}  // namespace
}  // namespace tensorgym
