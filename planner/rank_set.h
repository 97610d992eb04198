// A set of ranks kept as sorted, disjoint, non-adjacent closed intervals. Tree
// reductions combine contiguous blocks, so sets stay a handful of intervals even for
// millions of ranks: the validator tracks contributions in O(intervals), not O(p).
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace canopy::planner {

class RankSet {
 public:
  static RankSet single(int rank) { return range(rank, rank); }
  static RankSet range(int lo, int hi) {
    RankSet s;
    if (lo <= hi) s.iv_.push_back({lo, hi});
    return s;
  }

  bool empty() const { return iv_.empty(); }
  bool operator==(const RankSet& o) const { return iv_ == o.iv_; }

  bool disjoint(const RankSet& o) const {
    std::size_t i = 0, j = 0;
    while (i < iv_.size() && j < o.iv_.size()) {
      if (iv_[i].second < o.iv_[j].first) ++i;
      else if (o.iv_[j].second < iv_[i].first) ++j;
      else return false;
    }
    return true;
  }

  // Union of two disjoint sets.
  void merge(const RankSet& o) {
    std::vector<std::pair<int, int>> all;
    all.reserve(iv_.size() + o.iv_.size());
    std::size_t i = 0, j = 0;
    while (i < iv_.size() || j < o.iv_.size()) {
      const bool take_mine = j == o.iv_.size() || (i < iv_.size() && iv_[i].first < o.iv_[j].first);
      const auto next = take_mine ? iv_[i++] : o.iv_[j++];
      if (!all.empty() && all.back().second + 1 >= next.first)
        all.back().second = std::max(all.back().second, next.second);
      else
        all.push_back(next);
    }
    iv_ = std::move(all);
  }

  // True when `left` is one interval that ends right where `right`, one interval,
  // starts: left (op) right then keeps canonical rank order.
  static bool adjacent(const RankSet& left, const RankSet& right) {
    return left.iv_.size() == 1 && right.iv_.size() == 1 && left.iv_[0].second + 1 == right.iv_[0].first;
  }

  std::string str() const {
    if (iv_.empty()) return "{}";
    std::string out = "{";
    for (std::size_t k = 0; k < iv_.size(); ++k) {
      if (k) out += ",";
      out += std::to_string(iv_[k].first);
      if (iv_[k].second != iv_[k].first) out += ".." + std::to_string(iv_[k].second);
    }
    return out + "}";
  }

  std::string intersection_str(const RankSet& o) const {
    RankSet both;
    for (const auto& a : iv_)
      for (const auto& b : o.iv_) {
        const int lo = std::max(a.first, b.first), hi = std::min(a.second, b.second);
        if (lo <= hi) both.iv_.push_back({lo, hi});
      }
    return both.str();
  }

 private:
  std::vector<std::pair<int, int>> iv_;
};

}  // namespace canopy::planner
