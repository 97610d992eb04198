// A memo of the planner's pure results shared by every rank of one process: under
// SimGrid's SMPI all simulated ranks are one process, each with its own copy of
// libcanopy.so (privatized), and each priced every size class's candidates itself.
// The prices are pure functions of what every rank passes alike (planner/select.h:
// rank_choices; planner/learn.h: price_gradient), so one rank's answer is every rank's;
// computing it p times was most of a simulation's wall time (256 ranks on cluster-edr,
// 1 MiB reduces with trials: three quarters of the CPU in the ranks' copies of the
// planner and the allocations it made, simulating candidates; a 1024-rank run did not
// finish in 10 minutes). Simulated time is not what it saves (SMPI does not charge
// computation, smpi/simulate-computation:no): only the simulation's own wall time.
//
// The store lives in a library of its own, libcanopy_process_memo.so, which the SMPI
// build links to libcanopy.so and SMPI does not privatize, so every rank's copy finds
// the same one. Other builds neither build nor link it: there a process is one rank,
// and the callers compute (the store's two functions are weak references, null there).
// Whether to use it is the platform's (Platform::shares_plans_between_ranks).
#pragma once

#include <functional>
#include <string>

namespace canopy::shim {

// Whether this process keeps such a memo (its ranks share one process, and the store
// is linked). Elsewhere callers compute directly, without making keys.
bool process_memo_in_use();

// compute()'s result, or the one this process's ranks already computed for `key`. The
// key must name every input of compute() (the caller serializes them); equal keys must
// mean equal results. Without a memo, compute() itself.
std::string memoized(const std::string& key, const std::function<std::string()>& compute);

}  // namespace canopy::shim
