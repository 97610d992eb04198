// Canopy's own loops for the reductions MPI programs use most: MPI_SUM and MPI_PROD on
// the predefined floating types and 4- and 8-byte integers, MPI_PROD, MPI_BAND, MPI_BOR
// and MPI_BXOR on every integer type, MPI_MIN and MPI_MAX on the signed integer ones.
//
// Why: the executor combines each segment with MPI_Reduce_local, and MPICH 4.0's is a
// scalar loop (1 MiB of doubles: 50 us here, against 25 us for a vectorised one and
// 22 us for a memcpy), so on a node, where every other step is a memory copy, the
// reductions are the critical path. Open MPI vectorises its own (its "avx" op
// component); these loops give Canopy the same on either MPI.
//
// Exactness: every element is one operation on two operands, in the order MPICH writes
// it (inout[i] = inout[i] op in[i]), so the result is the one MPI_Reduce_local gives,
// bit for bit: vector instructions do the same IEEE operation per lane, nothing is
// reassociated, and signed integers wrap as two's complement does. One exception: where
// both operands of a floating sum or product are NaN, which NaN comes out (its sign and
// payload) is the compiler's choice of operand order, here as in MPI's own loop; it is
// a NaN either way (tests/shim/reduce_kernels_check.cpp).
// Left to MPI_Reduce_local, so that results equal the native ones:
//  * floating MIN and MAX: MPIs treat NaN and signed zeros in them differently (a vector
//    min/max instruction returns its second operand for a NaN);
//  * MIN and MAX on unsigned types: MPICH 4.0.2 compares them as signed (MPI_MIN of
//    0x80000000u and 0u gives 0x80000000u; Open MPI 4.1 gives 0), and a result must be
//    the one the native collective would give;
//  * SUM on 1- and 2-byte integers: Open MPI 4.1.4's vectorised sum saturates there
//    (int8 100 + 100: 127 in a call of 256 elements, -56 in a call of one, which its
//    scalar loop takes, and in MPICH), so no one loop equals both MPIs.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace canopy::shim {

// inout[i] = inout[i] (op) in[i] for i < n.
using ReduceKernel = void (*)(const void* in, void* inout, std::int64_t n);
// out[i] = a[i] (op) b[i] for i < n: the same loop with `a` in inout's place, into a
// third buffer (what copying a into out and then combining b into it would give).
using ReduceIntoKernel = void (*)(const void* a, const void* b, void* out, std::int64_t n);

struct ReduceKernels {
  ReduceKernel combine = nullptr;
  ReduceIntoKernel into = nullptr;
  // `into` with non-temporal stores (x86-64 with AVX2 or AVX-512; null elsewhere): for a
  // large output nobody reads at once, written without first reading its cache lines.
  ReduceIntoKernel stream = nullptr;
};

// Canopy's loops for `op` on `type` (both, or neither: null where MPI_Reduce_local must
// do it: user operations, derived types, floating MIN/MAX, other predefined types).
// Each thread remembers its last answer (a program reduces with one or two pairs).
ReduceKernels reduce_kernels(MPI_Op op, MPI_Datatype type);
inline ReduceKernel reduce_kernel(MPI_Op op, MPI_Datatype type) { return reduce_kernels(op, type).combine; }

// inout = in (op) inout over n elements of a predefined or derived type: the kernel
// where there is one, else MPI_Reduce_local. Returns an MPI error code.
inline int combine(ReduceKernel kernel, const void* in, void* inout, int n, MPI_Datatype type, MPI_Op op) {
  if (kernel) {
    kernel(in, inout, n);
    return MPI_SUCCESS;
  }
  return PMPI_Reduce_local(in, inout, n, type, op);
}

}  // namespace canopy::shim
