#include "planner/cost_model.h"

#include <charconv>
#include <cmath>
#include <fstream>
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
  m.direct_fixed = 0;  // no system call in units that are not seconds
  m.duplex = Duplex::Half;
  m.overlap = true;
  return m;
}

CostModel plogp_model(double L, std::vector<std::pair<std::int64_t, double>> gap) {
  CostModel m;
  m.kind = "plogp";
  m.alpha = L;
  m.gap = std::move(gap);
  m.duplex = Duplex::Full;
  m.overlap = true;
  return m;
}

namespace {

// Seconds per byte between two points of a pLogP gap table.
double slope(const std::pair<std::int64_t, double>& a, const std::pair<std::int64_t, double>& b) {
  return (b.second - a.second) / static_cast<double>(b.first - a.first);
}

}  // namespace

double CostModel::gap_at(std::int64_t bytes) const {
  if (gap.size() == 1) return gap.front().second;
  // The segment of the table that holds `bytes`, or the last one to extrapolate.
  std::size_t i = 1;
  while (i + 1 < gap.size() && gap[i].first < bytes) ++i;
  const auto [m0, g0] = gap[i - 1];
  if (bytes <= m0) return g0;
  return std::max(0.0, g0 + slope(gap[i - 1], gap[i]) * static_cast<double>(bytes - m0));
}

double CostModel::large_message_per_byte() const {
  if (gap.empty()) return beta;
  if (gap.size() < 2) return 0;
  return std::max(0.0, slope(gap[gap.size() - 2], gap.back()));
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

namespace {

// The ports' time, where the latency is in flight.
void put_port(std::ostream& out, const CostModel& m) {
  if (m.port_per_byte != 0) out << ",port=" << shortest(m.port_per_byte);
  if (m.port_fixed != 0) out << ",port_fixed=" << shortest(m.port_fixed);
}

// The direct copies' price, where it is not the starting one.
void put_direct(std::ostream& out, const CostModel& m) {
  if (m.direct_per_byte != 0) out << ",direct=" << shortest(m.direct_per_byte);
  if (m.direct_fixed != kDirectCopyFixedSeconds) out << ",direct_fixed=" << shortest(m.direct_fixed);
}

}  // namespace

std::string CostModel::spec() const {
  std::ostringstream out;
  if (kind == "overlap") {
    out << "overlap:d=" << shortest(alpha) << ",c=" << shortest(reduce_fixed);
    return out.str();
  }
  if (kind == "plogp") {
    out << "plogp:L=" << shortest(alpha) << ",g=";
    for (std::size_t i = 0; i < gap.size(); ++i)
      out << (i ? "/" : "") << gap[i].first << ":" << shortest(gap[i].second);
    out << ",gamma=" << shortest(gamma);
    if (copy_per_byte != 0) out << ",copy=" << shortest(copy_per_byte);
    put_direct(out, *this);
    put_port(out, *this);
    out << ",duplex=" << (duplex == Duplex::Full ? "full" : "half") << ",overlap=" << (overlap ? 1 : 0);
    return out.str();
  }
  out << "hockney:alpha=" << shortest(alpha) << ",beta=" << shortest(beta) << ",gamma=" << shortest(gamma);
  if (copy_per_byte != 0) out << ",copy=" << shortest(copy_per_byte);
  put_direct(out, *this);
  put_port(out, *this);
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


// "M1:G1/M2:G2/..." -> increasing (bytes, seconds) pairs.
std::vector<std::pair<std::int64_t, double>> parse_gaps(const std::string& text) {
  std::vector<std::pair<std::int64_t, double>> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, '/')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos)
      throw std::invalid_argument("pLogP gap '" + item + "' is not of the form BYTES:SECONDS");
    const double bytes = parse_number("g bytes", item.substr(0, colon));
    // Whole bytes that fit std::int64_t: casting 1e90 is undefined behaviour, and 0.5
    // and 0.7 would both become 0 (found by fuzzing).
    if (bytes != std::floor(bytes) || bytes >= 9223372036854775808.0)
      throw std::invalid_argument("pLogP gap size '" + item.substr(0, colon) +
                                  "' is not a whole number of bytes below 2^63");
    const double g = parse_number("g seconds", item.substr(colon + 1));
    if (!out.empty() && bytes <= out.back().first)
      throw std::invalid_argument("pLogP gaps must be listed by increasing message size");
    out.push_back({static_cast<std::int64_t>(bytes), g});
  }
  if (out.empty()) throw std::invalid_argument("pLogP needs g=BYTES:SECONDS[/BYTES:SECONDS...]");
  return out;
}

// A pLogP file: "L <s>", "<bytes> <g s>" rows, optional "gamma <s/B>", "copy <s/B>",
// "direct <s/B>", "direct_fixed <s>".
std::string plogp_file_to_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("pLogP file '" + path + "' cannot be read");
  std::string L, gaps, extra;
  for (std::string line; std::getline(in, line);) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::stringstream words(line);
    std::string key, value, more;
    if (!(words >> key)) continue;
    if (!(words >> value) || (words >> more))
      throw std::invalid_argument("pLogP file '" + path + "': line '" + line + "' is not 'KEY VALUE'");
    if (key == "L") L = value;
    else if (key == "gamma" || key == "copy" || key == "direct" || key == "direct_fixed")
      extra += "," + key + "=" + value;
    else gaps += (gaps.empty() ? "" : "/") + key + ":" + value;
  }
  if (L.empty()) throw std::invalid_argument("pLogP file '" + path + "' has no 'L <seconds>' line");
  return "L=" + L + ",g=" + gaps + extra;
}

}  // namespace

CostModel parse_model(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  std::string body = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "plogp" && body.find('=') == std::string::npos) body = plogp_file_to_spec(body);
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
  } else if (kind == "hockney" || kind == "plogp") {
    if (kind == "hockney") {
      const double a = take("alpha", true, 0);
      const double b = take("beta", true, 0);
      m = hockney_model(a, b, 0);
    } else {
      const double L = take("L", true, 0);
      auto it = pairs.find("g");
      if (it == pairs.end()) throw std::invalid_argument("model 'plogp' needs g=BYTES:SECONDS[/...]");
      m = plogp_model(L, parse_gaps(it->second));
      pairs.erase(it);
    }
    m.port_per_byte = take("port", false, 0);
    m.port_fixed = take("port_fixed", false, 0);
    if (m.port_fixed != 0 && m.port_per_byte == 0)
      throw std::invalid_argument("model parameter port_fixed=" + shortest(m.port_fixed) +
                                  ": allowed only with port=P (seconds a message holds the ports beside its bytes)");
    m.gamma = take("gamma", false, 0);
    m.copy_per_byte = take("copy", false, 0);
    m.direct_per_byte = take("direct", false, 0);
    m.direct_fixed = take("direct_fixed", false, kDirectCopyFixedSeconds);
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
                                "': allowed hockney:alpha=A,beta=B[,gamma=G,copy=C,direct=D,direct_fixed=S,port=P,port_fixed=F,"
                                "duplex=half|full,overlap=0|1], overlap:d=D,c=C, plogp:L=L,g=M:G/M:G[,...,port=P,"
                                "port_fixed=F] or plogp:FILE");
  }
  if (!pairs.empty())
    throw std::invalid_argument("model '" + kind + "' has no parameter '" + pairs.begin()->first + "'");
  return m;
}

}  // namespace canopy::planner
