// The binomial tree algorithm (001_*.txt, Langou, "Binomial Tree"; 000_*.txt, Canon &
// Antoniu, Definition 12): every schedule it emits must be provably correct, for any
// communicator size, root, operation kind, message size and segmentation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include "planner/cost_model.h"
#include "planner/tree.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

// The reduce schedules take three shapes with the model: full duplex prefetches the
// next segment into a second set of slots; half duplex with overlap posts a segment's
// receives before reducing; half duplex without overlap (Langou's unidirectional
// system) receives each operand just before reducing it. A broadcast depends on the
// duplex mode only.
std::vector<CostModel> reduce_models() {
  return {default_model(), overlap_model(1, 2), hockney_model(1, 0.5, 0.25)};
}
std::vector<CostModel> bcast_models() { return {default_model(), hockney_model(1, 0.5, 0.25)}; }

constexpr std::int64_t kCounts[] = {0, 1, 7, 100};

std::vector<std::int64_t> segment_sizes(std::int64_t element_bytes) {
  return {0, element_bytes, 3 * element_bytes};
}

int sends_in(const Schedule& s) {
  int n = 0;
  for (const auto& rank : s.steps)
    n += static_cast<int>(std::count_if(rank.begin(), rank.end(),
                                        [](const Step& st) { return st.kind == StepKind::Send; }));
  return n;
}

// In a binomial tree (relative) rank v sits popcount(v) levels below the root
// (Definition 12: each order adds one level above the second copy's nodes).
int binomial_depth(int p) {
  int deepest = 0;
  for (int v = 0; v < p; ++v) deepest = std::max(deepest, __builtin_popcount(static_cast<unsigned>(v)));
  return deepest;
}

}  // namespace

TEST_CASE("Binomial reduce (Langou 001, binomial tree) validates for p = 1..33, every root, "
          "commutative and non-commutative, any count and segment size",
          "[binomial][validate]") {
  const std::int64_t element_bytes = 4;
  for (const CostModel& model : reduce_models())
    for (int p = 1; p <= 33; ++p)
      for (int root = 0; root < p; ++root)
        for (bool commutative : {true, false})
          for (std::int64_t count : kCounts)
            for (std::int64_t seg : segment_sizes(element_bytes)) {
              const Problem problem = make_problem(Collective::Reduce, p, root, count, element_bytes,
                                                   commutative, seg, model);
              const Schedule s = plan_with("binomial", problem);
              check_valid(s);
            }
}

TEST_CASE("Binomial bcast (Langou 001, binomial tree) validates for p = 1..33, every root, "
          "any count and segment size",
          "[binomial][validate]") {
  const std::int64_t element_bytes = 8;
  for (const CostModel& model : bcast_models())
    for (int p = 1; p <= 33; ++p)
      for (int root = 0; root < p; ++root)
        for (std::int64_t count : kCounts)
          for (std::int64_t seg : segment_sizes(element_bytes)) {
            const Problem problem =
                make_problem(Collective::Bcast, p, root, count, element_bytes, true, seg, model);
            const Schedule s = plan_with("binomial", problem);
            check_valid(s);
          }
}

TEST_CASE("Binomial tree (Definition 12 of 000, Langou 001): ceil(log2 p) rounds at the root, "
          "p-1 messages per segment, one forwarding message more for a non-commutative op whose "
          "root is not rank 0",
          "[binomial]") {
  const CostModel model = hockney_model(1, 0, 0);
  for (int p = 1; p <= 40; ++p)
    for (int root = 0; root < p; ++root)
      for (bool commutative : {true, false}) {
        CAPTURE(p, root, commutative);
        const Schedule reduce = plan_with(
            "binomial", make_problem(Collective::Reduce, p, root, 10, 4, commutative, 8, model));
        const int nseg = static_cast<int>(reduce.segments.size());
        REQUIRE(nseg == 5);
        const bool forwards = !commutative && root != 0;
        CHECK(sends_in(reduce) == (p - 1 + (forwards ? 1 : 0)) * nseg);
        const Tree tree = tree_of(reduce);
        REQUIRE_NOTHROW(tree.check());
        CHECK(tree.root == (forwards ? 0 : root));
        CHECK(static_cast<int>(tree.children[tree.root].size()) == ceil_log2(p));
        CHECK(depth(tree) == binomial_depth(p));

        if (!commutative) continue;
        const Schedule bcast =
            plan_with("binomial", make_problem(Collective::Bcast, p, root, 10, 4, true, 8, model));
        CHECK(sends_in(bcast) == (p - 1) * nseg);
        const Tree down = tree_of(bcast);
        REQUIRE_NOTHROW(down.check());
        CHECK(down.root == root);
        CHECK(static_cast<int>(down.children[root].size()) == ceil_log2(p));
        CHECK(depth(down) == binomial_depth(p));
      }
}

TEST_CASE("Binomial reduce for a non-commutative op: every subtree is a contiguous rank range "
          "and operands arrive from the right (canonical rank order)",
          "[binomial]") {
  const CostModel model = hockney_model(1, 0, 0);
  for (int p = 2; p <= 33; ++p) {
    const Schedule s =
        plan_with("binomial", make_problem(Collective::Reduce, p, p - 1, 1, 4, false, 0, model));
    const Tree t = tree_of(s);
    // Subtree of r = r .. r + size - 1.
    std::vector<int> lo(p), hi(p);
    std::function<void(int)> walk = [&](int r) {
      lo[r] = hi[r] = r;
      for (int c : t.children[r]) {
        walk(c);
        lo[r] = std::min(lo[r], lo[c]);
        hi[r] = std::max(hi[r], hi[c]);
      }
    };
    walk(t.root);
    for (int r = 0; r < p; ++r) {
      CAPTURE(p, r);
      int expected_next = r + 1;  // children in the order r receives from them
      for (int c : t.children[r]) {
        CHECK(lo[c] == expected_next);
        expected_next = hi[c] + 1;
      }
      CHECK(hi[r] == expected_next - 1);
      for (const Step& st : s.steps[r])
        if (st.kind == StepKind::Reduce) CHECK_FALSE(st.incoming_is_left);
    }
  }
}
