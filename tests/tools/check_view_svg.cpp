// Reads back the SVG charts of the tools and checks them against the planner.
//
//   check_view_svg gantt SVG INPUT ENTRY [MAX_RANKS]
//     SVG is canopy-view's chart of schedule ENTRY of INPUT (canopy-plan --json output
//     or a CANOPY_SCHEDULE_LOG). Checks: the SVG is well-formed; its makespan equals
//     the prediction recorded in INPUT (canopy-plan's or the shim's, made when the
//     schedule was planned) and the title shows it; it draws min(ranks, MAX_RANKS)
//     ranks (default 64); every bar lies within [0, makespan] and within the picture;
//     per drawn rank the bars stand for exactly the steps of positive duration that
//     the simulator gives under the recorded model (on the recorded topology, if any).
//
//   check_view_svg curves SVG COMPARE_JSON BYTES
//     SVG is canopy-plan --compare --svg; COMPARE_JSON is canopy-plan --compare --json
//     for the same problem at --bytes BYTES. Checks: well-formed; one curve per
//     algorithm that planned; every curve passes through BYTES at the time --compare
//     printed for it; each curve's points match its data.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/cost_model.h"
#include "planner/describe.h"
#include "planner/schedule_json.h"
#include "planner/simulate.h"
#include "planner/topology_json.h"

namespace {

struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;  // its own character data, entities decoded
};

int failures = 0;
void fail(const std::string& why) {
  std::cerr << "check_view_svg: " << why << "\n";
  ++failures;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Decodes the five predefined entities and character references; anything else
// after '&' is not well-formed.
std::string decode(const std::string& raw) {
  static const std::map<std::string, std::string> named = {
      {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '<') throw std::runtime_error("raw '<' in text or attribute");
    if (raw[i] != '&') {
      out += raw[i];
      continue;
    }
    const std::size_t end = raw.find(';', i);
    if (end == std::string::npos) throw std::runtime_error("unterminated entity");
    const std::string name = raw.substr(i + 1, end - i - 1);
    if (named.count(name)) out += named.at(name);
    else if (name.size() > 1 && name[0] == '#') out += '?';
    else throw std::runtime_error("unknown entity &" + name + ";");
    i = end;
  }
  return out;
}

// A strict little XML reader: tags must nest and close, attributes must be quoted,
// text must escape '<' and '&', and there must be exactly one root element.
std::vector<Element> parse_xml(const std::string& doc) {
  std::vector<Element> elements;
  std::vector<std::size_t> open;  // indices into elements
  int roots = 0;
  std::size_t i = 0;
  auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':'; };
  while (i < doc.size()) {
    if (doc[i] != '<') {
      const std::size_t next = doc.find('<', i);
      const std::string text = decode(doc.substr(i, next - i));
      if (open.empty()) {
        if (text.find_first_not_of(" \t\r\n") != std::string::npos) throw std::runtime_error("text outside the root");
      } else {
        elements[open.back()].text += text;
      }
      i = next == std::string::npos ? doc.size() : next;
      continue;
    }
    if (doc.compare(i, 4, "<!--") == 0 || doc.compare(i, 2, "<?") == 0) {
      const std::size_t end = doc.find(doc[i + 1] == '!' ? "-->" : "?>", i);
      if (end == std::string::npos) throw std::runtime_error("unterminated comment or declaration");
      i = end + 2;
      continue;
    }
    if (doc.compare(i, 2, "</") == 0) {
      const std::size_t end = doc.find('>', i);
      if (end == std::string::npos) throw std::runtime_error("unterminated closing tag");
      const std::string name = doc.substr(i + 2, end - i - 2);
      if (open.empty() || elements[open.back()].name != name) throw std::runtime_error("</" + name + "> closes nothing open");
      open.pop_back();
      i = end + 1;
      continue;
    }
    Element e;
    ++i;
    while (i < doc.size() && is_name(doc[i])) e.name += doc[i++];
    if (e.name.empty()) throw std::runtime_error("a tag without a name");
    bool closed = false;
    for (;;) {
      while (i < doc.size() && std::isspace(static_cast<unsigned char>(doc[i]))) ++i;
      if (i >= doc.size()) throw std::runtime_error("unterminated <" + e.name + ">");
      if (doc[i] == '>') {
        ++i;
        break;
      }
      if (doc.compare(i, 2, "/>") == 0) {
        i += 2;
        closed = true;
        break;
      }
      std::string key;
      while (i < doc.size() && is_name(doc[i])) key += doc[i++];
      if (key.empty() || i + 1 >= doc.size() || doc[i] != '=' || (doc[i + 1] != '\'' && doc[i + 1] != '"'))
        throw std::runtime_error("bad attribute in <" + e.name + ">");
      const char quote = doc[i + 1];
      const std::size_t end = doc.find(quote, i + 2);
      if (end == std::string::npos) throw std::runtime_error("unterminated attribute " + key);
      if (e.attributes.count(key)) throw std::runtime_error("attribute " + key + " twice in <" + e.name + ">");
      e.attributes[key] = decode(doc.substr(i + 2, end - i - 2));
      i = end + 1;
    }
    if (open.empty() && ++roots > 1) throw std::runtime_error("more than one root element");
    elements.push_back(e);
    if (!closed) open.push_back(elements.size() - 1);
  }
  if (!open.empty()) throw std::runtime_error("<" + elements[open.back()].name + "> never closed");
  if (roots != 1 || elements.front().name != "svg") throw std::runtime_error("the root is not one <svg>");
  return elements;
}

double number(const Element& e, const std::string& key) {
  const auto it = e.attributes.find(key);
  if (it == e.attributes.end()) throw std::runtime_error("<" + e.name + "> lacks " + key);
  return std::stod(it->second);
}

bool close_to(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1e-300}); }

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Entry `index` of INPUT: the JSON object holding the schedule, the model and the
// prediction. Read here without canopy-view's code, so that its reader is checked too.
nlohmann::json input_entry(const std::string& path, int index) {
  const std::string text = read_file(path);
  const auto whole = nlohmann::json::parse(text, nullptr, false);
  if (!whole.is_discarded()) {
    if (index != 0) throw std::runtime_error(path + " holds one schedule");
    return whole;
  }
  std::istringstream in(text);
  int seen = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    if (j.value("event", "") != "schedule") continue;
    if (seen++ == index) return j;
  }
  throw std::runtime_error(path + " has no schedule entry " + std::to_string(index));
}

void check_gantt(const std::vector<Element>& svg, const std::string& input, int index, int max_ranks) {
  const nlohmann::json entry = input_entry(input, index);
  const auto schedule = canopy::planner::schedule_from_json(entry.at("schedule"));
  const auto model = canopy::planner::parse_model(entry.at("model").get<std::string>());
  const double recorded = entry.contains("predicted_s") ? entry.at("predicted_s").get<double>()
                                                        : entry.at("makespan").get<double>();
  const Element& root = svg.front();
  const double makespan = number(root, "data-makespan");
  if (!close_to(makespan, recorded))
    fail("the chart's makespan " + std::to_string(makespan) + " differs from the recorded " + std::to_string(recorded));
  std::string title;
  for (const Element& e : svg)
    if (e.name == "title" && title.empty()) title = e.text;
  const std::string shown = "makespan " + canopy::planner::format_seconds(recorded);
  if (title.find(shown) == std::string::npos) fail("the title '" + title + "' does not show '" + shown + "'");
  if (title.find(schedule.algorithm) == std::string::npos) fail("the title does not name the algorithm");

  const int drawn = static_cast<int>(number(root, "data-ranks-drawn"));
  if (drawn != std::min(schedule.nranks, max_ranks))
    fail("draws " + std::to_string(drawn) + " ranks, expected " + std::to_string(std::min(schedule.nranks, max_ranks)));
  std::optional<canopy::planner::Topology> topology;
  if (entry.contains("topology")) topology = canopy::planner::topology_from_json(entry.at("topology")).topology;
  const auto sim = canopy::planner::simulate(schedule, model, topology ? &*topology : nullptr);
  if (!sim.ok) throw std::runtime_error("the schedule does not simulate: " + sim.error);
  std::vector<int> expected(schedule.nranks, 0), found(schedule.nranks, 0);
  for (int r = 0; r < schedule.nranks; ++r)
    for (const auto& t : sim.timing[r]) expected[r] += t.end > t.start;
  const double width = number(root, "width");
  int bars = 0;
  for (const Element& e : svg) {
    const auto cls = e.attributes.find("class");
    if (e.name != "rect" || cls == e.attributes.end() || cls->second.rfind("bar ", 0) != 0) continue;
    ++bars;
    const int r = static_cast<int>(number(e, "data-rank"));
    if (r < 0 || r >= drawn) {
      fail("a bar for rank " + std::to_string(r) + ", which is not drawn");
      continue;
    }
    found[r] += static_cast<int>(number(e, "data-steps"));
    const double start = number(e, "data-start"), end = number(e, "data-end");
    if (start < 0 || end <= start || end > makespan * (1 + 1e-12))
      fail("rank " + std::to_string(r) + ": a bar from " + std::to_string(start) + " to " + std::to_string(end) +
           " outside [0, makespan]");
    if (number(e, "x") < 0 || number(e, "x") + number(e, "width") > width + 0.05 || number(e, "width") <= 0)
      fail("rank " + std::to_string(r) + ": a bar outside the picture");
  }
  for (int r = 0; r < drawn; ++r)
    if (found[r] != expected[r])
      fail("rank " + std::to_string(r) + ": bars stand for " + std::to_string(found[r]) + " steps, the simulation has " +
           std::to_string(expected[r]) + " of positive duration");
  if (failures == 0)
    std::cout << "check_view_svg: " << bars << " bars for " << drawn << " of " << schedule.nranks
              << " ranks, makespan " << shown << "\n";
}

void check_curves(const std::vector<Element>& svg, const std::string& compare_json, long long bytes) {
  const auto compare = nlohmann::json::parse(read_file(compare_json));
  std::map<std::string, const Element*> curves;
  for (const Element& e : svg)
    if (e.name == "polyline" && e.attributes.count("class") && e.attributes.at("class") == "curve") {
      const std::string name = e.attributes.at("data-algorithm");
      if (curves.count(name)) fail("two curves for " + name);
      curves[name] = &e;
      const auto points = words(e.attributes.at("points"));
      if (points.size() != words(e.attributes.at("data-bytes")).size() ||
          points.size() != words(e.attributes.at("data-predicted")).size() || points.size() < 2)
        fail(name + ": " + std::to_string(points.size()) + " points do not match its data");
    }
  std::size_t planned = 0;
  for (const auto& row : compare.at("algorithms")) {
    if (row.contains("declined")) continue;
    ++planned;
    const std::string name = row.at("algorithm");
    if (!curves.count(name)) {
      fail("no curve for " + name);
      continue;
    }
    const auto xs = words(curves[name]->attributes.at("data-bytes"));
    const auto ys = words(curves[name]->attributes.at("data-predicted"));
    bool at_bytes = false;
    for (std::size_t k = 0; k < xs.size(); ++k)
      if (std::stoll(xs[k]) == bytes) {
        at_bytes = true;
        if (!close_to(std::stod(ys[k]), row.at("makespan").get<double>()))
          fail(name + " at " + std::to_string(bytes) + " B: the curve has " + ys[k] + ", --compare printed " +
               row.at("makespan").dump());
      }
    if (!at_bytes) fail(name + ": no point at " + std::to_string(bytes) + " B");
  }
  if (curves.size() != planned)
    fail(std::to_string(curves.size()) + " curves for " + std::to_string(planned) + " algorithms that planned");
  if (failures == 0) std::cout << "check_view_svg: " << curves.size() << " curves, one per algorithm\n";
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() >= 4 && args[0] == "gantt")
      check_gantt(parse_xml(read_file(args[1])), args[2], std::stoi(args[3]), args.size() > 4 ? std::stoi(args[4]) : 64);
    else if (args.size() == 4 && args[0] == "curves")
      check_curves(parse_xml(read_file(args[1])), args[2], std::stoll(args[3]));
    else {
      std::cerr << "usage: check_view_svg gantt SVG INPUT ENTRY [MAX_RANKS] | curves SVG COMPARE_JSON BYTES\n";
      return 2;
    }
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return failures ? 1 : 0;
}
