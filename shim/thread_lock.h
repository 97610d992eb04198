// A mutex that locks only when the application initialised MPI with
// MPI_THREAD_MULTIPLE. Canopy's code runs only inside the application's MPI calls.
// Below MULTIPLE those calls never overlap: with SINGLE and FUNNELED one thread makes
// them all, and with SERIALIZED the application itself orders them (its own
// synchronisation gives the happens-before that a lock would), so a lock would only
// cost time. runtime().thread_level is set in MPI_Init* before any other Canopy code
// runs and never changes afterwards, so lock() and unlock() always agree.
#pragma once

#include <mpi.h>

#include <mutex>

#include "shim/runtime.h"

namespace canopy::shim {

class ThreadLock {
 public:
  void lock() {
    if (engaged()) mutex_.lock();
  }
  void unlock() {
    if (engaged()) mutex_.unlock();
  }

 private:
  static bool engaged() { return runtime().concurrent_calls(); }
  std::mutex mutex_;
};

}  // namespace canopy::shim
