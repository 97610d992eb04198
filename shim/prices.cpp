#include "shim/prices.h"

#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>

#include "planner/topology_json.h"
#include "shim/process_memo.h"

namespace canopy::shim {

namespace {

// Values as bytes, for the memo's keys and values.
class Bytes {
 public:
  template <typename T>
  Bytes& put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    text_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Bytes& put(const std::string& s) { return put(s.size()).append(s); }
  std::string take() { return std::move(text_); }

 private:
  Bytes& append(const std::string& s) {
    text_ += s;
    return *this;
  }
  std::string text_;
};

class Reader {
 public:
  explicit Reader(const std::string& text) : text_(text) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, text_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string get_string() {
    const auto n = get<std::size_t>();
    std::string s = text_.substr(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ >= text_.size(); }

 private:
  const std::string& text_;
  std::size_t at_ = 0;
};

// Every input of a price: each field of the problem (a field added to planner::Problem
// belongs here too, or ranks of one process would share a price made for another
// problem; the model's come from CostModel::fields), the topology as its JSON text.
void put_problem(Bytes& b, const planner::Problem& p) {
  b.put(p.collective).put(p.nranks).put(p.root).put(p.count).put(p.element_bytes).put(p.commutative);
  b.put(p.segment_bytes).put(p.segment_counts.size());
  for (std::int64_t c : p.segment_counts) b.put(c);
  b.put(p.limit);
  // The model's fields (planner::CostModel::fields), the pLogP gaps counted.
  auto put_field = [&b](const auto& field) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, decltype(planner::CostModel::gap)>) {
      b.put(field.size());
      for (const auto& [bytes, seconds] : field) b.put(bytes).put(seconds);
    } else {
      b.put(field);
    }
  };
  std::apply([&](const auto&... field) { (put_field(field), ...); }, p.model.fields());
  b.put(p.topology ? planner::topology_to_json(*p.topology).dump() : std::string());
  b.put(p.staging_entries).put(p.staging_entry_bytes).put(p.direct_access);
}

void put_choice(Bytes& b, const planner::Choice& c) {
  b.put(c.algorithm).put(c.segment_bytes).put(c.predicted).put(c.exact);
}

}  // namespace

std::vector<planner::Choice> rank_choices(const planner::Problem& problem, const planner::Request& request) {
  if (!process_memo_in_use()) return planner::rank_choices(problem, request);
  Bytes key;
  key.put(std::string("rank_choices"));
  put_problem(key, problem);
  key.put(request.algorithm).put(request.segment_bytes).put(request.homogeneous_only);
  key.put(request.composable_only).put(request.bounded);
  const std::string value = memoized(key.take(), [&] {
    Bytes out;
    for (const planner::Choice& c : planner::rank_choices(problem, request)) put_choice(out, c);
    return out.take();
  });
  std::vector<planner::Choice> ranked;
  for (Reader in(value); !in.done();) {
    planner::Choice c;
    c.algorithm = in.get_string();
    c.segment_bytes = in.get<std::int64_t>();
    c.predicted = in.get<double>();
    c.exact = in.get<bool>();
    ranked.push_back(std::move(c));
  }
  return ranked;
}

planner::ModelGradient price_gradient(const planner::Problem& problem, const planner::Choice& choice) {
  if (!process_memo_in_use()) return planner::price_gradient(problem, choice);
  Bytes key;
  key.put(std::string("price_gradient"));
  put_problem(key, problem);
  put_choice(key, choice);
  const std::string value =
      memoized(key.take(), [&] { return Bytes().put(planner::price_gradient(problem, choice)).take(); });
  return Reader(value).get<planner::ModelGradient>();
}

}  // namespace canopy::shim
