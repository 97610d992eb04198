// CANOPY_SAVE_RULES in the shim: each communicator's rank 0 notes what its plans' trials
// decided; at MPI_Finalize world rank 0 gathers the notes of every rank and writes them
// as a settings file (config/saved_rules.h says what it holds and why).
#pragma once

#include <mpi.h>

#include <string>

#include "config/saved_rules.h"

namespace canopy::shim {

// Notes one decision of this process (thread-safe). At most kMaxNotedDecisions are kept,
// the first ones: a program that makes communicators again and again decides the same
// sizes again. Returns where it was noted (kNotNoted: not kept). A plan's later decision
// (native's trial after the schedules', a recheck: planner/trials.h) passes where its
// earlier one was noted as `replaces`, and takes its place: the file says what the plan
// ran last.
constexpr std::size_t kMaxNotedDecisions = 4096;
constexpr std::size_t kNotNoted = static_cast<std::size_t>(-1);
std::size_t note_decision(config::Decision decision, std::size_t replaces = kNotNoted);

// Collective over `comm` (Canopy's duplicate of MPI_COMM_WORLD): rank 0 writes the file
// at `path`. Returns, on rank 0, an error for the log (or ""), and in `*rules` the rules
// written.
std::string save_rules(const std::string& path, MPI_Comm comm, int* rules);

}  // namespace canopy::shim
