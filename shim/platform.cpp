// The one place where a build for SimGrid's SMPI differs from one for a real MPI
// (CANOPY_SMPI, defined for this file alone by shim/CMakeLists.txt when CANOPY_MPI=smpi).
// Everything else in the shim asks platform() what it may do.
#include "shim/platform.h"

#include <unistd.h>

#ifdef CANOPY_SMPI
#include <simgrid/host.h>
#endif

namespace canopy::shim {

#ifdef CANOPY_SMPI
const Platform& platform() {
  static const Platform smpi{"smpi",
                             /*simulated=*/true,
                             /*polling_waits=*/false,
                             /*nonblocking_collectives=*/false,
                             /*nonblocking_dup=*/false,
                             /*probe_duplicates_world=*/false,
                             /*builds_whole_schedules=*/false,
                             /*shares_plans_between_ranks=*/true,
                             /*cross_memory_attach=*/false,
                             /*shared_memory_ring=*/false,
                             /*helper_threads=*/false,
                             /*hwloc_describes_node=*/false,
                             /*nodes_from_processor_names=*/false};
  return smpi;
}

long cores_of_this_node() { return sg_host_core_count(sg_host_self()); }
#else
const Platform& platform() {
  static const Platform mpi{"mpi",
                            /*simulated=*/false,
                            /*polling_waits=*/true,
                            /*nonblocking_collectives=*/true,
                            /*nonblocking_dup=*/true,
                            /*probe_duplicates_world=*/true,
                            /*builds_whole_schedules=*/true,
                            /*shares_plans_between_ranks=*/false,
                            /*cross_memory_attach=*/true,
                            /*shared_memory_ring=*/true,
                            /*helper_threads=*/true,
                            /*hwloc_describes_node=*/true,
                            /*nodes_from_processor_names=*/true};
  return mpi;
}

long cores_of_this_node() { return sysconf(_SC_NPROCESSORS_ONLN); }
#endif

}  // namespace canopy::shim
