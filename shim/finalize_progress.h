// Keeps MPICH's UCX worker progressing while MPI_Finalize waits for the other ranks, so
// that a rank still closing its connections gets its peers' answers.
//
// MPICH 4.0.x over UCX finalizes in this order (src/mpid/ch4/netmod/ucx/ucx_init.c):
// close every endpoint in flush mode (ucp_disconnect_nb), call ucp_worker_progress
// until all the closes complete, then wait in a PMI barrier (a blocking read from the
// process manager, no UCX progress) before destroying the worker. Over UCX's tcp
// transport (1.13) the flush of an endpoint that sent since the peer last acknowledged
// sends a 25-byte zero-length PUT request and completes only when the peer answers. A
// peer whose own closes completed at once (it only received on that connection) is
// already in the PMI barrier and never reads the request: the sender spins forever in
// ucp_worker_progress and the others wait for it in the barrier (measured: ss shows
// the 25 bytes unread in the blocked peers' sockets). MPICH removed that barrier later
// (pmodels/mpich#6596), so that a rank that finished closing destroys its worker and
// its peers see the connection end.
//
// While the calling thread is inside PMPI_Finalize, from MPICH's first
// ucp_disconnect_nb until it destroys the worker, a helper thread calls
// ucp_worker_progress on MPICH's worker(s); MPICH's own UCX calls in that window take
// the same lock (UCX allows one thread at a time on a SERIALIZED worker, which is how
// MPICH creates it). A rank blocked in the PMI barrier then still answers its peers'
// flush requests. Nothing is sent that MPICH would not send: the helper only lets UCX
// finish the handshakes MPICH started.
//
// Built where mpi.h is MPICH's and UCX's headers exist (libmpich-dev depends on
// libucx-dev); elsewhere the functions below do nothing.
#pragma once

namespace canopy::shim {

// Called by MPI_Init's wrapper around PMPI_Init / PMPI_Init_thread: the workers UCX
// creates meanwhile are MPICH's (an application's own UCX workers are never touched).
void finalize_progress_init_begin();
void finalize_progress_init_end();

// Called by MPI_Finalize's wrapper right before PMPI_Finalize: `enabled` is
// CANOPY_FINALIZE_PROGRESS. The helper starts at MPICH's first ucp_disconnect_nb.
void finalize_progress_arm(bool enabled);
// What the helper did, for the log.
struct FinalizeHelperStats {
  bool ran = false;
  long calls = 0;    // progress calls it made
  long busy = 0;     // of which found something to do (a peer's request answered, ...)
  int workers = 0;   // MPICH's UCX workers it could progress
};
// Right after PMPI_Finalize returns: stops the helper if MPICH did not destroy its
// worker (an error path), and returns what it did.
FinalizeHelperStats finalize_progress_disarm();

// Whether this build can keep UCX progressing (MPICH and UCX's headers at build time).
bool finalize_progress_available();

}  // namespace canopy::shim
