// See finalize_progress.h for why. The UCX functions below replace UCX's own for the
// whole process (libcanopy.so is preloaded, so MPICH's calls reach them first); each
// forwards to UCX's (dlsym RTLD_NEXT) and, outside the finalize window, does nothing
// else: one relaxed atomic load on MPICH's progress path.
#include "shim/finalize_progress.h"

#include <mpi.h>

#if defined(MPICH) && __has_include(<ucp/api/ucp.h>)
#define CANOPY_UCX_FINALIZE 1
#endif

#if defined(CANOPY_UCX_FINALIZE)

#include <dlfcn.h>
#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "shim/export.h"

// ucp_disconnect_nb and ucp_request_is_completed are deprecated in UCX's API; MPICH
// 4.0.x calls them, so these are the names to replace.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace canopy::shim {

namespace {

// UCX's own function `name`, looked up once.
template <typename F>
F* real(F*& cache, const char* name) {
  if (!cache) cache = reinterpret_cast<F*>(dlsym(RTLD_NEXT, name));
  return cache;
}

decltype(&ucp_worker_create) real_worker_create;
decltype(&ucp_worker_query) real_worker_query;
decltype(&ucp_worker_progress) real_worker_progress;
decltype(&ucp_worker_destroy) real_worker_destroy;
decltype(&ucp_disconnect_nb) real_disconnect;
decltype(&ucp_request_is_completed) real_is_completed;
decltype(&ucp_request_check_status) real_check_status;
decltype(&ucp_request_release) real_release;
decltype(&ucp_cleanup) real_cleanup;

// MPICH's workers: created during PMPI_Init with a thread mode that lets another thread
// call them when the creating thread does not (MPICH asks for SERIALIZED). MPICH has
// one per VCI (one unless MPIR_CVAR_CH4_UCX_MAX_VNIS says otherwise).
constexpr int kMaxWorkers = 64;
std::array<std::atomic<ucp_worker_h>, kMaxWorkers> workers{};
std::atomic<int> worker_count{0};
std::atomic<bool> in_init{false};

std::atomic<bool> armed{false};   // inside Canopy's MPI_Finalize, CANOPY_FINALIZE_PROGRESS=1
std::atomic<bool> active{false};  // the helper runs: MPICH's UCX calls take `lock`
std::atomic<bool> stop{false};
// Recursive: UCX may call its own exported functions (through the ones below) while
// MPICH's call holds the lock.
std::recursive_mutex lock;
// Never destroyed: a process that exits inside PMPI_Finalize (an MPI error path) would
// otherwise destroy a joinable std::thread at exit, which terminates it.
std::thread& helper() {
  static std::thread* const thread = new std::thread();
  return *thread;
}
std::atomic<long> helper_calls{0}, helper_busy{0};
std::atomic<int> helped_workers{0};  // how many workers the helper progressed

// How long the helper rests after a progress call that found nothing to do. It only has
// to answer handshakes, and resting leaves the core to the ranks still closing (on an
// oversubscribed node one of them may be waiting for this one's core).
constexpr auto kIdleRest = std::chrono::microseconds(100);

void help() {
  while (!stop.load(std::memory_order_acquire)) {
    unsigned events = 0;
    {
      std::lock_guard<std::recursive_mutex> guard(lock);
      const int n = worker_count.load(std::memory_order_acquire);
      for (int i = 0; i < n; ++i) events += real(real_worker_progress, "ucp_worker_progress")(workers[i].load());
    }
    helper_calls.fetch_add(1, std::memory_order_relaxed);
    if (events) helper_busy.fetch_add(1, std::memory_order_relaxed);
    else std::this_thread::sleep_for(kIdleRest);
  }
}

void start_helper() {
  if (active.load() || worker_count.load() == 0) return;
  stop.store(false);
  helped_workers.store(worker_count.load());
  active.store(true, std::memory_order_release);  // from here MPICH's UCX calls lock
  helper() = std::thread(help);
}

void stop_helper() {
  if (!active.load(std::memory_order_acquire)) return;
  stop.store(true, std::memory_order_release);
  if (helper().joinable()) helper().join();
  active.store(false, std::memory_order_release);
}

// Runs `call` under the lock while the helper runs, directly otherwise.
template <typename Call>
auto guarded(Call&& call) {
  if (!active.load(std::memory_order_relaxed)) return call();
  std::lock_guard<std::recursive_mutex> guard(lock);
  return call();
}

}  // namespace

void finalize_progress_init_begin() { in_init.store(true); }
void finalize_progress_init_end() { in_init.store(false); }

void finalize_progress_arm(bool enabled) {
  helper_calls.store(0);
  helper_busy.store(0);
  helped_workers.store(0);
  armed.store(enabled);
}

FinalizeHelperStats finalize_progress_disarm() {
  armed.store(false);
  const bool ran = active.load();
  stop_helper();
  return {ran || helper_calls.load() > 0, helper_calls.load(), helper_busy.load(), helped_workers.load()};
}

bool finalize_progress_available() { return true; }

}  // namespace canopy::shim

using namespace canopy::shim;

CANOPY_EXPORT ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t* params,
                                             ucp_worker_h* worker_p) {
  const ucs_status_t status = real(real_worker_create, "ucp_worker_create")(context, params, worker_p);
  if (status != UCS_OK || !in_init.load()) return status;
  // Only a worker another thread may call when its creator does not.
  ucp_worker_attr_t attr;
  attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  if (real(real_worker_query, "ucp_worker_query")(*worker_p, &attr) != UCS_OK ||
      attr.thread_mode == UCS_THREAD_MODE_SINGLE)
    return status;
  const int slot = worker_count.load();
  if (slot < kMaxWorkers) {
    workers[slot].store(*worker_p);
    worker_count.store(slot + 1, std::memory_order_release);
  }
  return status;
}

CANOPY_EXPORT unsigned ucp_worker_progress(ucp_worker_h worker) {
  return guarded([&] { return real(real_worker_progress, "ucp_worker_progress")(worker); });
}

CANOPY_EXPORT ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep) {
  if (armed.load(std::memory_order_relaxed)) start_helper();
  return guarded([&] { return real(real_disconnect, "ucp_disconnect_nb")(ep); });
}

CANOPY_EXPORT int ucp_request_is_completed(void* request) {
  return guarded([&] { return real(real_is_completed, "ucp_request_is_completed")(request); });
}

CANOPY_EXPORT ucs_status_t ucp_request_check_status(void* request) {
  return guarded([&] { return real(real_check_status, "ucp_request_check_status")(request); });
}

CANOPY_EXPORT void ucp_request_release(void* request) {
  guarded([&] { real(real_release, "ucp_request_release")(request); });
}

// MPICH destroys its worker after the PMI barrier, when every rank has closed its
// endpoints: the helper stops first, since the worker is about to go.
CANOPY_EXPORT void ucp_worker_destroy(ucp_worker_h worker) {
  stop_helper();
  real(real_worker_destroy, "ucp_worker_destroy")(worker);
}

CANOPY_EXPORT void ucp_cleanup(ucp_context_h context) {
  stop_helper();
  worker_count.store(0);
  real(real_cleanup, "ucp_cleanup")(context);
}

#else  // not MPICH, or no UCX headers: MPI_Finalize is left as it is.

namespace canopy::shim {
void finalize_progress_init_begin() {}
void finalize_progress_init_end() {}
void finalize_progress_arm(bool) {}
FinalizeHelperStats finalize_progress_disarm() { return {}; }
bool finalize_progress_available() { return false; }
}  // namespace canopy::shim

#endif
