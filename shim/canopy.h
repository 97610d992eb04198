/* Canopy's small C API, exported by libcanopy.so next to the MPI wrappers. Programs
 * need not use it: it lets tests and tools ask a preloaded Canopy what it did
 * (look the symbols up with dlsym(RTLD_DEFAULT, ...)). */
#ifndef CANOPY_H
#define CANOPY_H

#define CANOPY_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Reduce/MPI_Bcast/MPI_Allreduce calls on this rank that ran a Canopy schedule. */
long canopy_intercepted_calls(void);
/* Calls on this rank that Canopy handed to native MPI. */
long canopy_fallback_calls(void);
/* Of those, the calls of one collective ("reduce", "bcast" or "allreduce") for one reason, by its
 * stable name: "disabled", "algorithm-native", "intercommunicator", "invalid-argument",
 * "unsupported-datatype", "op-query-failed", "state-failed", "planning-error",
 * "validator-rejected", "auto-trial-native", "auto-chose-native", "internal-error", "configured",
 * "auto-below-threshold", "no-staging-ring", "auto-native-first"
 * (shim/fallback.h). -1 for an unknown collective or reason. */
long canopy_fallback_count(const char *collective, const char *reason);
/* Communicators whose Canopy state (private duplicate, plans) is alive on this rank;
 * a communicator the application frees releases its state. */
long canopy_live_comm_states(void);
/* Plans this rank made (plan-cache misses) and plan-cache hits, over all communicators:
 * plans are made per size class of messages (CANOPY_SEGMENT_BYTES and CANOPY_CONFIG
 * rules: per count), so a program cycling through many counts makes few. */
long canopy_plans_made(void);
long canopy_plan_cache_hits(void);
const char* canopy_version(void);

#ifdef __cplusplus
}
#endif

#endif
