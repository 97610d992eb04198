// The staging ring's rules that hold across calls (planner/staged.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <vector>

#include "planner/staged.h"

using namespace canopy::planner;

namespace {

// Runs calls of the given stage counts through a ring of `entries` entries the way the
// shim does (stage k of a call in entry (origin + k) mod entries), and returns the
// fewest stages between two uses of one entry, and how many entries the calls used.
struct RingUse {
  long shortest_reuse = std::numeric_limits<long>::max();
  int entries_used = 0;
};

RingUse run_calls(const std::vector<int>& calls, int entries, int ranks) {
  std::vector<long> last_use(entries, -1);
  RingUse use;
  long clock = 0;  // stages staged so far, over all calls
  int origin = 0;
  for (int stages : calls) {
    REQUIRE(origin >= 0);
    REQUIRE(origin < entries);
    for (int k = 0; k < stages; ++k, ++clock) {
      const int entry = (origin + k) % entries;
      if (last_use[entry] >= 0) use.shortest_reuse = std::min(use.shortest_reuse, clock - last_use[entry]);
      last_use[entry] = clock;
    }
    origin = next_staging_origin(origin, stages, entries, ranks);
  }
  use.entries_used = static_cast<int>(std::count_if(last_use.begin(), last_use.end(), [](long t) { return t >= 0; }));
  return use;
}

}  // namespace

TEST_CASE("Staged: past two ranks, a call that fills a quarter of the ring or more, without wrapping, restarts "
          "where it started",
          "[staged]") {
  for (int ranks : {3, 8, 16, 32}) {
    const int entries = staging_entries_for(ranks);
    for (int stages = entries / 4; stages <= entries; ++stages) {
      CAPTURE(ranks, entries, stages);
      // The same call over and over stays on its first `stages` entries...
      const RingUse use = run_calls(std::vector<int>(10, stages), entries, ranks);
      CHECK(use.entries_used == stages);
      // ...and each entry still waits `stages` stages, at least a quarter of the ring.
      CHECK(use.shortest_reuse == stages);
      CHECK(4 * use.shortest_reuse >= entries);
    }
  }
}

TEST_CASE("Staged: a short call, one that wraps the ring, or any call of two ranks starts after the last one",
          "[staged]") {
  for (int ranks : {2, 3, 8, 16, 32}) {
    const int entries = staging_entries_for(ranks);
    std::vector<int> moving;
    for (int stages = 1; 4 * stages < entries; ++stages) moving.push_back(stages);
    for (int stages = entries + 1; stages <= 3 * entries + 1; stages += 3) moving.push_back(stages);
    if (ranks == 2)
      for (int stages = entries / 4; stages <= entries; ++stages) moving.push_back(stages);
    for (int stages : moving) {
      CAPTURE(ranks, entries, stages);
      // Restarting would reuse an entry after `stages` stages (short calls) or
      // `stages` mod entries (calls that wrap); moving on waits a whole ring each time.
      const RingUse use = run_calls(std::vector<int>(4 * entries, stages), entries, ranks);
      CHECK(use.shortest_reuse == entries);
      CHECK(use.entries_used == entries);
    }
  }
}

TEST_CASE("Staged: calls of mixed lengths keep the origin inside the ring", "[staged]") {
  const std::vector<int> calls = {1, 22, 16, 4, 86, 3, 15, 32, 0, 2, 17, 1, 64, 5};
  for (int ranks : {2, 16}) {
    const int entries = staging_entries_for(ranks);
    int origin = 0;
    for (int stages : calls) {
      origin = next_staging_origin(origin, stages, entries, ranks);
      CHECK(origin >= 0);
      CHECK(origin < entries);
    }
  }
  CHECK(next_staging_origin(5, 3, 0, 2) == 0);  // no ring: nothing to rotate
}

TEST_CASE("Staged: an entry warms up over its first two uses by a rank, in each part and quarter apart", "[staged]") {
  const int parts = 3, entries = 16;
  EntryUses uses(parts, entries);
  // 2 ranks' 64 KiB broadcasts, 2 stages a call, moving on through the ring: the first 16
  // calls (two passes) warm the root's entries up, and no call after them does.
  int origin = 0, warming_calls = 0;
  for (int call = 0; call < 40; ++call) {
    bool warming = false;
    for (int k = 0; k < 2; ++k) warming = uses.use(0, (origin + k) % entries) || warming;
    if (warming) ++warming_calls;
    CHECK(warming == (call < 16));
    origin = next_staging_origin(origin, 2, entries, 2);
  }
  CHECK(warming_calls == 16);
  // Another part's entries warm up on their own: its entry 0 is still new.
  CHECK(uses.use(1, 0));
  CHECK(uses.use(1, 0));
  CHECK_FALSE(uses.use(1, 0));
  // Out of range (a rank or an entry the ring does not have): never warming, no harm.
  CHECK_FALSE(uses.use(parts, 0));
  CHECK_FALSE(uses.use(0, entries));
  CHECK_FALSE(uses.use(-1, 0));
  CHECK_FALSE(EntryUses().use(0, 0));
  // By quarters of an entry: after two uses of 32 KiB, a use of 48 KiB still warms up
  // the third quarter (its pages are new), twice, and then nothing does.
  EntryUses quarters(1, 1);
  CHECK(quarters.use(0, 0, 32 * 1024));
  CHECK(quarters.use(0, 0, 32 * 1024));
  CHECK_FALSE(quarters.use(0, 0, 32 * 1024));
  CHECK_FALSE(quarters.use(0, 0, 8));  // within the first quarter
  CHECK(quarters.use(0, 0, 48 * 1024));
  CHECK(quarters.use(0, 0, 40 * 1024));
  CHECK_FALSE(quarters.use(0, 0, 48 * 1024));
  CHECK(quarters.use(0, 0, kStagingEntryBytes));
  CHECK(quarters.use(0, 0));  // (the whole entry by default)
  CHECK_FALSE(quarters.use(0, 0));
  // A 2-rank ring's entries of 128 KiB: quarters of 32 KiB, so a 32 KiB chunk warms one
  // quarter and a 96 KiB chunk after it the next two.
  EntryUses wide(1, 1, kTwoRankStagingEntryBytes);
  CHECK(wide.use(0, 0, 32 * 1024));
  CHECK(wide.use(0, 0, 32 * 1024));
  CHECK_FALSE(wide.use(0, 0, 32 * 1024));
  CHECK(wide.use(0, 0, 96 * 1024));
  CHECK(wide.use(0, 0, 96 * 1024));
  CHECK_FALSE(wide.use(0, 0, 96 * 1024));
  CHECK(wide.use(0, 0));  // the last quarter, by default the whole entry
}
