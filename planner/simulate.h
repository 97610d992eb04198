// Discrete-event simulation of a schedule under a cost model: its makespan, and when
// each step started and ended (for Gantt charts and for comparing with real runs).
//
// Semantics, shared with the validator and the executor: a rank issues its steps in
// order; receives are posted at once, a send is posted when its data is ready, a
// reduce or copy occupies the rank until it ends; a step that overwrites an
// accumulator segment first waits for the sends still reading it to end (of the input
// too in an allreduce: validate.h). A transfer starts when both ends
// are posted and both ports are free, and a port serves its transfers in program
// order (a rank's steps say in which order it talks to its peers). With duplex=half a
// rank has one port for sends and receives; with overlap=false computation also
// holds that port, as in Langou's unidirectional model. Staging ring steps
// (schedule.h) are the rank's own work: a stage costs a copy and starts once its ring
// entry is free, a fetch a copy and a fetch-reduce a reduction, each once its stage ended
// and kStagingHandoffSeconds more (in models of seconds: not in the (d, c) model).
// Direct steps too: an Expose takes no time and waits for the receives into the rank's
// accumulator to land; a Read or Write costs CostModel::direct_copy on the accessor's
// core once its peer's Expose has run (the exposer's call lasts until the last access
// ends: those are the accessors' steps, inside the makespan).
//
// Node cards: with a topology, the ranks of a node share its network card. A message
// between two nodes holds its sender node's card (sending) and its receiver node's card
// (receiving) for its bytes at the card's rate (cluster_cards: the fastest link of the
// node's cluster), from the first time at which both are free that long
// (CardCalendar in simulate.cpp); its latency holds no card. Only nodes of two or more
// ranks have one: a node's only rank holds its own ports at least as long. Decision,
// measured under SimGrid's SMPI on tools/sim/platforms/cluster-edr.xml (16 ranks a
// node): one 1 MiB message between two nodes took 103 us, sixteen at once between the
// same two nodes (one per rank pair) 1441 us, and sixteen at once inside a node 97 us.
// Every rank its own ports, the simulator priced hierarchical-leaders' 1 MiB allreduce
// at 1024 ranks at 1.61 ms where it took 3.1-3.3 ms (its nodes send 18-23 MiB each
// through their cards), and the trials paid for trying it (docs/performance-history.md,
// section 29). Serving the messages one after another where a card shares its rate
// among them ends the last one at the same time.
#pragma once

#include <string>
#include <vector>

#include "planner/cost_model.h"
#include "planner/schedule.h"
#include "planner/topology.h"

namespace canopy::planner {

// A staged segment's hand-over from one core to another: the flag written by the stage
// reaching the reader, and the entry's first lines moving between caches. Without it
// the model priced staged schedules of a few bytes at nanoseconds and chose them over
// every point-to-point schedule (a 56-byte reduce on 5 ranks: 19 ns). An estimate of
// the order of a cache-line transfer between cores through a virtualised L3, not a
// measurement of it.
constexpr double kStagingHandoffSeconds = 5e-7;

struct StepTiming {
  double start = -1;  // transfer or computation start; -1 for never
  double end = -1;
};

struct Simulation {
  bool ok = false;
  std::string error;  // why the model cannot run the schedule (e.g. port deadlock)
  double makespan = 0;
  std::vector<std::vector<StepTiming>> timing;  // [rank][step]
};

// With a topology (of schedule.nranks ranks), messages are priced per pair of ranks
// (topology.h); reductions and copies follow `model`.
Simulation simulate(const Schedule& schedule, const CostModel& model, const Topology* topology = nullptr);

}  // namespace canopy::planner
