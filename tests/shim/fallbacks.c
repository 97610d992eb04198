/* fallbacks: calls Canopy hands to native MPI must give native MPI's results, and
 * Canopy must count each under its reason.
 *
 *  (a) ordinary reduces and broadcasts on MPI_COMM_WORLD (sizes 1, 100, 5000 ints,
 *      every root), results checked: run as usual, or natively when a setting or
 *      CANOPY_FAULT makes Canopy decline them;
 *  (b) an intercommunicator (>= 2 ranks): MPI_Reduce and MPI_Bcast, results checked;
 *  (c) invalid arguments under MPI_ERRORS_RETURN (root out of range, count -1,
 *      MPI_DATATYPE_NULL): every rank gets MPI's own error back;
 *  (d) a datatype with a negative extent (MPI_Type_create_resized), reduced with a
 *      user op: Canopy declines it, native MPI reduces it;
 *  (e) MPI_OP_NULL under MPI_ERRORS_RETURN (with (c)): MPI_Op_commutative fails, MPI
 *      reports its own error.
 *
 * --expect=COLL:REASON[,COLL:REASON...] (COLL reduce or bcast; REASON a name from
 * canopy.h): each must have counted at least one call on every rank, read through
 * canopy_fallback_count (which must then exist: run with Canopy preloaded).
 */
#include "canopy_check.h"

static unsigned long long seed;

static int input(int rank, int i, int salt) { return (int)(ct_hash(seed, (uint64_t)salt, (uint64_t)rank, (uint64_t)i) % 1000); }

static void world_calls(void) {
  static int send[5000], recv[5000];
  const int counts[] = {1, 100, 5000};
  for (int c = 0; c < 3; c++) {
    for (int root = 0; root < ct.size; root++) {
      const int n = counts[c];
      ct_context("(a) reduce %d ints, root %d", n, root);
      for (int i = 0; i < n; i++) send[i] = input(ct.rank, i, 1), recv[i] = -1;
      ct_check(MPI_Reduce(send, recv, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD) == MPI_SUCCESS, "error return");
      if (ct.rank == root) {
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++) {
          int want = 0;
          for (int r = 0; r < ct.size; r++) want += input(r, i, 1);
          if (recv[i] != want) bad = i;
        }
        ct_check(bad < 0, "wrong sum at %d", bad);
      }
      ct_context("(a) bcast %d ints, root %d", n, root);
      for (int i = 0; i < n; i++) recv[i] = ct.rank == root ? input(root, i, 2) : -1;
      ct_check(MPI_Bcast(recv, n, MPI_INT, root, MPI_COMM_WORLD) == MPI_SUCCESS, "error return");
      int bad = -1;
      for (int i = 0; i < n && bad < 0; i++)
        if (recv[i] != input(root, i, 2)) bad = i;
      ct_check(bad < 0, "wrong data at %d", bad);
    }
  }
}

static void intercomm_calls(void) {
  const int half = ct.size / 2, in_a = ct.rank < half;
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, in_a, ct.rank, &local);
  int lrank;
  MPI_Comm_rank(local, &lrank);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, in_a ? half : 0, 78, &inter);
  int rsize;
  MPI_Comm_remote_size(inter, &rsize);
  /* root: rank 0 of group A */
  const int rootarg = in_a ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  int send[10], recv[10];
  ct_context("(b) intercommunicator reduce");
  for (int i = 0; i < 10; i++) send[i] = input(ct.rank, i, 3), recv[i] = -1;
  MPI_Reduce(send, recv, 10, MPI_INT, MPI_SUM, rootarg, inter);
  if (rootarg == MPI_ROOT)
    for (int i = 0; i < 10; i++) {
      int want = 0;
      for (int r = half; r < ct.size; r++) want += input(r, i, 3);
      ct_check(recv[i] == want, "sum over group B wrong at %d", i);
    }
  ct_context("(b) intercommunicator bcast");
  for (int i = 0; i < 10; i++) recv[i] = rootarg == MPI_ROOT ? input(0, i, 4) : -1;
  MPI_Bcast(recv, 10, MPI_INT, rootarg, inter);
  for (int i = 0; i < 10; i++)
    ct_check(recv[i] == (rootarg == MPI_PROC_NULL ? -1 : input(0, i, 4)), "bcast data wrong at %d", i);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

/* Erroneous calls MPI must report (MPICH 4.0.2 checks these; it does not check a
 * negative count in MPI_Reduce and crashes). Errors of calls without a communicator
 * (MPI_Type_size, MPI_Op_commutative, which Canopy makes) go to MPI_COMM_SELF's handler
 * (MPI 4) or MPI_COMM_WORLD's, so all three return errors here. */
static void invalid_calls(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int x = 1, y = 0;
  ct_context("(c) reduce with root = size");
  ct_check(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, ct.size, comm) != MPI_SUCCESS, "no error returned");
  ct_context("(c) bcast with count -1");
  ct_check(MPI_Bcast(&x, -1, MPI_INT, 0, comm) != MPI_SUCCESS, "no error returned");
  ct_context("(c) reduce of MPI_DATATYPE_NULL");
  ct_check(MPI_Reduce(&x, &y, 1, MPI_DATATYPE_NULL, MPI_SUM, 0, comm) != MPI_SUCCESS, "no error returned");
  ct_context("(c) bcast of MPI_DATATYPE_NULL");
  ct_check(MPI_Bcast(&x, 1, MPI_DATATYPE_NULL, 0, comm) != MPI_SUCCESS, "no error returned");
  ct_context("(e) reduce with MPI_OP_NULL");
  ct_check(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, 0, comm) != MPI_SUCCESS, "no error returned");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_free(&comm);
}

static void sum_ints(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static void datatype_calls(void) {
  MPI_Datatype backwards;
  MPI_Type_create_resized(MPI_INT, 0, -(MPI_Aint)sizeof(int), &backwards);
  MPI_Type_commit(&backwards);
  MPI_Op op;
  MPI_Op_create(sum_ints, 1, &op);
  int x = input(ct.rank, 0, 5), y = -1;
  ct_context("(d) reduce of a negative-extent datatype");
  MPI_Reduce(&x, &y, 1, backwards, op, 0, MPI_COMM_WORLD);
  if (ct.rank == 0) {
    int want = 0;
    for (int r = 0; r < ct.size; r++) want += input(r, 0, 5);
    ct_check(y == want, "sum %d, want %d", y, want);
  }
  MPI_Op_free(&op);
  MPI_Type_free(&backwards);
}

static void check_expectations(const char *list) {
  typedef long (*count_fn)(const char *, const char *);
  count_fn fn;
  void *sym = dlsym(RTLD_DEFAULT, "canopy_fallback_count");
  memcpy(&fn, &sym, sizeof fn);
  ct_context("--expect=%s", list);
  if (!ct_check(fn != NULL, "canopy_fallback_count not found: is libcanopy.so preloaded?")) return;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *item = strtok(buf, ","); item; item = strtok(NULL, ",")) {
    char *colon = strchr(item, ':');
    if (!ct_check(colon != NULL, "bad --expect item '%s'", item)) continue;
    *colon = '\0';
    const long n = fn(item, colon + 1);
    ct_check(n > 0, "canopy_fallback_count(%s, %s) = %ld, expected > 0", item, colon + 1, n);
    if (ct.rank == 0) printf("fallbacks: rank 0: %s %s: %ld calls\n", item, colon + 1, n);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  seed = ct_seed_from(argc, argv, 11);
  ct_init("fallbacks", seed);
  const char *expect = NULL;
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--expect=", 9) == 0) expect = argv[i] + 9;
  world_calls();
  if (ct.size >= 2) intercomm_calls();
  invalid_calls();
  datatype_calls();
  if (expect) check_expectations(expect);
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
