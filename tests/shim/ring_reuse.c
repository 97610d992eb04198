/* ring_reuse: a freed communicator's staging ring is taken over by the next
 * communicator over the same processes, and only where every rank still holds it
 * (shim/staging.h); and a communicator of a shape seen before gets copies of the plans
 * made then (shim/plan_cache.cpp, PlanRecipe). Run on 3 ranks with the staged
 * algorithms forced and CANOPY_LOG_LEVEL=debug; checks.cmake counts the log lines. In
 * order:
 *   1. four communicators duplicated from MPI_COMM_WORLD, each used and freed: the
 *      first makes a ring, the next three take it over;
 *   2. ranks 0 and 1 split off three communicators of their own (in rank order, in
 *      reversed order, in rank order again; rank 2 is alone meanwhile): the first two
 *      make rings (another order is other processes for each rank), the third takes
 *      the first's over, and ranks 0 and 1 have now let the world's ring go (a rank
 *      keeps StagingRing::kParkedRings = 2), while rank 2 still holds it;
 *   3. a duplicate of MPI_COMM_WORLD: rank 2 alone offers a ring, so a new one is made;
 *   4. one more duplicate takes that one over.
 * Each communicator plans a reduce and a broadcast at each of its roots. Rank 0 (rank 0
 * of every communicator but the reversed one) describes each plan: six new ones over 3
 * ranks in step 1, copies of them in every later duplicate (18 in step 1, 6 in step 3,
 * 6 in step 4); in step 2 the third split copies the first's 4 plans, and rank 2's
 * communicators of one rank copy the first one's 2 plans twice: 38 copies in all.
 * Every reduce and broadcast result is checked, at every root. */
#include "canopy_check.h"

#define COUNT 8192 /* 64 KiB of doubles: the staged algorithms go through the ring */

static double value(int rank, int call, int i) { return (double)((rank + 1) * 1000 + call * 7 + i % 13); }

static void use(MPI_Comm comm, int call) {
  static double send[COUNT], recv[COUNT];
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (int root = 0; root < size; root++) {
    for (int i = 0; i < COUNT; i++) send[i] = value(rank, call, i), recv[i] = -1;
    MPI_Reduce(send, recv, COUNT, MPI_DOUBLE, MPI_SUM, root, comm);
    if (rank == root) {
      int bad = -1;
      for (int i = 0; i < COUNT && bad < 0; i++) {
        double want = 0;
        for (int r = 0; r < size; r++) want += value(r, call, i);
        if (recv[i] != want) bad = i;
      }
      ct_check(bad < 0, "call %d: reduce at root %d of %d ranks wrong at %d", call, root, size, bad);
    }
    for (int i = 0; i < COUNT; i++) recv[i] = rank == root ? value(root, call, i) : -1;
    MPI_Bcast(recv, COUNT, MPI_DOUBLE, root, comm);
    int bad = -1;
    for (int i = 0; i < COUNT && bad < 0; i++)
      if (recv[i] != value(root, call, i)) bad = i;
    ct_check(bad < 0, "call %d: bcast from root %d of %d ranks wrong at %d", call, root, size, bad);
  }
}

static int calls = 0;

static void dup_use_free(void) {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  use(c, calls++);
  MPI_Comm_free(&c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ct_init("ring_reuse", ct_seed_from(argc, argv, 1));
  if (ct.size != 3) {
    if (ct.rank == 0) fprintf(stderr, "ring_reuse: run it on 3 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int i = 0; i < 4; i++) dup_use_free(); /* 1 */
  const int keys[3] = {ct.rank, -ct.rank, ct.rank};
  for (int i = 0; i < 3; i++) { /* 2 */
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, ct.rank < 2 ? 0 : 1, keys[i], &c);
    use(c, calls++);
    MPI_Comm_free(&c);
  }
  dup_use_free(); /* 3 */
  dup_use_free(); /* 4 */
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
