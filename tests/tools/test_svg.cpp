// The tools' SVG writer: escaping, scales and ticks, well-formed output.
#include <catch2/catch.hpp>

#include "tools/common/svg.h"

using namespace canopy::tools::svg;

TEST_CASE("svg: text and attributes are escaped") {
  CHECK(escape("a<b & 'c' \"d\" >") == "a&lt;b &amp; &apos;c&apos; &quot;d&quot; &gt;");
  Document doc(100, 50, "x < y & z");
  doc.text(1, 2, "5 < 6", {{"data-note", "it's"}});
  const std::string out = doc.str();
  CHECK(out.find("<title>x &lt; y &amp; z</title>") != std::string::npos);
  CHECK(out.find(">5 &lt; 6</text>") != std::string::npos);
  CHECK(out.find("data-note='it&apos;s'") != std::string::npos);
  CHECK(out.find("5 < 6") == std::string::npos);
}

TEST_CASE("svg: a linear scale maps its ends and ticks in 1-2-5 steps") {
  const Scale s = Scale::linear(0, 1e-5, 100, 600);
  CHECK(s(0) == Approx(100));
  CHECK(s(1e-5) == Approx(600));
  CHECK(s(5e-6) == Approx(350));
  const auto ticks = s.ticks(5);
  REQUIRE(ticks.size() == 6);  // 0, 2, 4, 6, 8, 10 (x 1e-6)
  CHECK(ticks.front() == 0);
  CHECK(ticks[1] == Approx(2e-6));
  CHECK(ticks.back() == Approx(1e-5));
  // A reversed pixel range (a y axis) maps the low end to the bottom.
  const Scale y = Scale::linear(1, 2, 300, 30);
  CHECK(y(1) == Approx(300));
  CHECK(y(2) == Approx(30));
}

TEST_CASE("svg: a log10 scale places decades evenly and ticks at powers of ten") {
  const Scale s = Scale::log10(2, 2000, 0, 300);
  CHECK(s(20) == Approx(100));
  CHECK(s(200) == Approx(200));
  const auto ticks = s.ticks();
  REQUIRE(ticks.size() == 3);
  CHECK(ticks[0] == Approx(10));
  CHECK(ticks[2] == Approx(1000));
  CHECK_THROWS(Scale::log10(0, 10, 0, 1));
  CHECK_THROWS(Scale::linear(1, 1, 0, 1));
}

TEST_CASE("svg: axes, legend and shapes nest in one svg element") {
  Document doc(200, 100, "t");
  doc.x_axis(Axis{Scale::linear(0, 10, 20, 180), "x"}, 80, 10);
  doc.legend(150, 10, {{"a", palette(0), true}, {"b", palette(1)}});
  doc.polyline({{0, 0}, {10, 10}}, "red");
  const std::string out = doc.str();
  CHECK(out.rfind("<svg ", 0) == 0);
  CHECK(out.find("</svg>") == out.size() - 7);
  CHECK(out.find("<svg ", 1) == std::string::npos);
  CHECK(out.find("points='0.0,0.0 10.0,10.0'") != std::string::npos);
  CHECK(out.find(">10</text>") != std::string::npos);  // the last tick's label
  CHECK(std::string(palette(10)) == palette(0));
  CHECK(dash_pattern(3).empty());
  CHECK_FALSE(dash_pattern(12).empty());
}
