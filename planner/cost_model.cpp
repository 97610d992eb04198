#include "planner/cost_model.h"

#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

namespace canopy::planner {

CostModel hockney_model(double alpha, double beta, double gamma) {
  CostModel m;
  m.kind = "hockney";
  m.alpha = alpha;
  m.beta = beta;
  m.gamma = gamma;
  return m;
}

CostModel overlap_model(double d, double c) {
  CostModel m;
  m.kind = "overlap";
  m.alpha = d;
  m.reduce_fixed = c;
  m.duplex = Duplex::Half;
  m.overlap = true;
  return m;
}

CostModel default_model() {
  CostModel m = hockney_model(2e-6, 1e-10, 1e-10);
  m.copy_per_byte = 1e-10;
  m.duplex = Duplex::Full;
  m.overlap = true;
  return m;
}

namespace {

// The shortest text that reads back as the same double.
std::string shortest(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

}  // namespace

std::string CostModel::spec() const {
  std::ostringstream out;
  if (kind == "overlap") {
    out << "overlap:d=" << shortest(alpha) << ",c=" << shortest(reduce_fixed);
    return out.str();
  }
  out << "hockney:alpha=" << shortest(alpha) << ",beta=" << shortest(beta) << ",gamma=" << shortest(gamma);
  if (copy_per_byte != 0) out << ",copy=" << shortest(copy_per_byte);
  out << ",duplex=" << (duplex == Duplex::Full ? "full" : "half") << ",overlap=" << (overlap ? 1 : 0);
  return out.str();
}

namespace {

double parse_number(const std::string& key, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v) || v < 0)
    throw std::invalid_argument("model parameter " + key + "='" + text +
                                "' is not a non-negative number");
  return v;
}

std::map<std::string, std::string> parse_pairs(const std::string& body) {
  std::map<std::string, std::string> out;
  std::stringstream in(body);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("model parameter '" + item + "' is not of the form key=value");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

}  // namespace

CostModel parse_model(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string body = colon == std::string::npos ? "" : spec.substr(colon + 1);
  auto pairs = parse_pairs(body);
  auto take = [&](const std::string& key, bool required, double fallback) {
    auto it = pairs.find(key);
    if (it == pairs.end()) {
      if (required) throw std::invalid_argument("model '" + kind + "' needs " + key + "=VALUE");
      return fallback;
    }
    const double v = parse_number(key, it->second);
    pairs.erase(it);
    return v;
  };
  CostModel m;
  if (kind == "overlap") {
    const double d = take("d", true, 0);
    const double c = take("c", true, 0);
    m = overlap_model(d, c);
  } else if (kind == "hockney") {
    const double a = take("alpha", true, 0);
    const double b = take("beta", true, 0);
    const double g = take("gamma", false, 0);
    m = hockney_model(a, b, g);
    m.copy_per_byte = take("copy", false, 0);
    if (auto it = pairs.find("duplex"); it != pairs.end()) {
      if (it->second != "half" && it->second != "full")
        throw std::invalid_argument("model parameter duplex='" + it->second + "': allowed half, full");
      m.duplex = it->second == "full" ? Duplex::Full : Duplex::Half;
      pairs.erase(it);
    }
    if (auto it = pairs.find("overlap"); it != pairs.end()) {
      if (it->second != "0" && it->second != "1")
        throw std::invalid_argument("model parameter overlap='" + it->second + "': allowed 0, 1");
      m.overlap = it->second == "1";
      pairs.erase(it);
    }
  } else {
    throw std::invalid_argument("model '" + spec +
                                "': allowed hockney:alpha=A,beta=B[,gamma=G,copy=C,duplex=half|full,"
                                "overlap=0|1] or overlap:d=D,c=C");
  }
  if (!pairs.empty())
    throw std::invalid_argument("model '" + kind + "' has no parameter '" + pairs.begin()->first + "'");
  return m;
}

}  // namespace canopy::planner
