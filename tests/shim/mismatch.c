/* mismatch: an erroneous program. Its ranks pass different counts to MPI_Bcast and
 * MPI_Reduce (rank r passes 100 + r elements), with MPI_ERRORS_RETURN on the
 * communicator. With CANOPY_VERIFY=1 every rank must get an error of class MPI_ERR_ARG
 * back (instead of hanging or corrupting memory), and the communicator must still
 * work afterwards: a correct broadcast and reduce follow and are checked.
 * Run it only with Canopy preloaded and CANOPY_VERIFY=1 (natively it is erroneous).
 */
#include "canopy_check.h"

static void expect_arg_error(int err, const char *call) {
  int cls = MPI_SUCCESS;
  if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (err != MPI_SUCCESS) MPI_Error_string(err, text, &len);
  ct_check(cls == MPI_ERR_ARG, "%s returned %d (class %d), want class MPI_ERR_ARG", call, err, cls);
  if (ct.rank == 0) printf("mismatch: rank 0: %s returned: %s\n", call, text);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ct_init("mismatch", 0);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int buf[200], out[200];
  for (int i = 0; i < 200; i++) buf[i] = i;

  ct_context("MPI_Bcast with count 100 + rank");
  expect_arg_error(MPI_Bcast(buf, 100 + ct.rank, MPI_INT, 0, comm), "MPI_Bcast");
  ct_context("MPI_Reduce with count 100 + rank");
  expect_arg_error(MPI_Reduce(buf, out, 100 + ct.rank, MPI_INT, MPI_SUM, 0, comm), "MPI_Reduce");
  ct_context("MPI_Bcast with root = rank");
  if (ct.size > 1) expect_arg_error(MPI_Bcast(buf, 10, MPI_INT, ct.rank, comm), "MPI_Bcast");

  /* The same communicator, used correctly. */
  ct_context("a correct MPI_Bcast afterwards");
  for (int i = 0; i < 200; i++) buf[i] = ct.rank == 0 ? 3 * i : -1;
  ct_check(MPI_Bcast(buf, 200, MPI_INT, 0, comm) == MPI_SUCCESS, "error return");
  for (int i = 0; i < 200; i++) ct_check(buf[i] == 3 * i, "bcast data wrong at %d", i);
  ct_context("a correct MPI_Reduce afterwards");
  ct_check(MPI_Reduce(buf, out, 200, MPI_INT, MPI_SUM, 0, comm) == MPI_SUCCESS, "error return");
  if (ct.rank == 0)
    for (int i = 0; i < 200; i++) ct_check(out[i] == 3 * i * ct.size, "sum wrong at %d", i);
  MPI_Comm_free(&comm);
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
