// reduce_kernels_check: Canopy's reduction loops (shim/reduce_kernels.h) give exactly
// what this MPI's MPI_Reduce_local gives, bit for bit, for every (operation, type) they
// take, on random data and on the values where operations differ (NaN, infinities,
// signed zeros, denormals, integer extremes whose sums and products wrap), at odd
// lengths and unaligned starts, in all forms (combined into inout, into a third buffer
// in one pass, and that pass with non-temporal stores where the CPU has them). Also that floating MIN/MAX and user operations get no loop
// (MPI_Reduce_local stays theirs). One rank; prints one line per pair checked.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "shim/reduce_kernels.h"
#include "tests/shim/check_failures.h"

namespace {

using canopy_test::check;
using canopy_test::failures;

// Bytes of `n` elements of `size` bytes: random bits, and every few elements one of the
// special values of the type (written by `special`).
template <typename Special>
std::vector<unsigned char> operand(std::mt19937_64& rng, std::size_t n, int size, Special special) {
  std::vector<unsigned char> out(n * size + 64);
  for (auto& b : out) b = static_cast<unsigned char>(rng());
  for (std::size_t i = 0; i < n; i += 3) special(out.data() + i * size, rng());
  return out;
}

void user_op(void*, void*, int*, MPI_Datatype*) {}

// Equal bit for bit, except that two NaNs are equal whatever their sign and payload
// (which NaN a sum of two NaNs gives is the compiler's choice of operand order).
bool same(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, bool floating, int size) {
  if (a == b) return true;
  if (!floating) return false;
  for (std::size_t at = 0; at + size <= a.size(); at += size) {
    if (std::memcmp(a.data() + at, b.data() + at, size) == 0) continue;
    bool nan_a, nan_b;
    if (size == 8) {
      double x, y;
      std::memcpy(&x, a.data() + at, 8);
      std::memcpy(&y, b.data() + at, 8);
      nan_a = std::isnan(x), nan_b = std::isnan(y);
    } else {
      float x, y;
      std::memcpy(&x, a.data() + at, 4);
      std::memcpy(&y, b.data() + at, 4);
      nan_a = std::isnan(x), nan_b = std::isnan(y);
    }
    if (!(nan_a && nan_b)) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct Type {
    MPI_Datatype type;
    const char* name;
    bool floating;
    bool is_unsigned = false;
  };
  const Type types[] = {
      {MPI_DOUBLE, "MPI_DOUBLE", true},      {MPI_FLOAT, "MPI_FLOAT", true},
      {MPI_INT, "MPI_INT", false},           {MPI_UNSIGNED, "MPI_UNSIGNED", false, true},
      {MPI_LONG, "MPI_LONG", false},         {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", false, true},
      {MPI_LONG_LONG, "MPI_LONG_LONG", false}, {MPI_SHORT, "MPI_SHORT", false},
      {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", false, true}, {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", false},
      {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", false, true}, {MPI_INT8_T, "MPI_INT8_T", false},
      {MPI_UINT64_T, "MPI_UINT64_T", false, true}, {MPI_INT64_T, "MPI_INT64_T", false},
  };
  struct Op {
    MPI_Op op;
    const char* name;
  };
  const Op ops[] = {{MPI_SUM, "MPI_SUM"}, {MPI_PROD, "MPI_PROD"}, {MPI_MIN, "MPI_MIN"},  {MPI_MAX, "MPI_MAX"},
                    {MPI_BAND, "MPI_BAND"}, {MPI_BOR, "MPI_BOR"}, {MPI_BXOR, "MPI_BXOR"}};
  std::mt19937_64 rng(20261125);
  int pairs = 0;
  for (const Type& t : types) {
    int size = 0;
    MPI_Type_size(t.type, &size);
    // The values where operations disagree, written over an element.
    auto special = [&](unsigned char* at, std::uint64_t pick) {
      if (t.floating && size == 8) {
        const double v[] = {std::nan(""), -std::nan(""), INFINITY, -INFINITY, 0.0, -0.0, 5e-324, -1.0, 1e308};
        std::memcpy(at, &v[pick % 9], 8);
      } else if (t.floating) {
        const float v[] = {std::nanf(""), INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f, -1.0f, 3e38f};
        std::memcpy(at, &v[pick % 8], 4);
      } else {
        // All ones, the sign bit alone, zero, one.
        std::memset(at, pick % 4 == 0 ? 0xff : 0, size);
        if (pick % 4 == 1) at[size - 1] = 0x80;
        if (pick % 4 == 3) at[0] = 1;
      }
    };
    for (const Op& o : ops) {
      const canopy::shim::ReduceKernels kernels = canopy::shim::reduce_kernels(o.op, t.type);
      const canopy::shim::ReduceKernel kernel = kernels.combine;
      check((kernels.combine == nullptr) == (kernels.into == nullptr),
            std::string(o.name) + " on " + t.name + ": both loops or neither");
      check(kernels.into != nullptr || kernels.stream == nullptr,
            std::string(o.name) + " on " + t.name + ": a streaming loop without the one-pass loop");
#if defined(__x86_64__) && defined(__GNUC__)
      // Every loop streams where the CPU has AVX2 (shim/reduce_kernels.cpp).
      if (__builtin_cpu_supports("avx2"))
        check((kernels.into == nullptr) == (kernels.stream == nullptr),
              std::string(o.name) + " on " + t.name + ": AVX2 here, but no streaming loop");
#endif
      // Left to MPI (shim/reduce_kernels.h says why): floating and unsigned MIN and MAX
      // (MPICH 4.0.2 compares unsigned types as signed), SUM on 1- and 2-byte integers
      // (Open MPI 4.1.4's vectorised sum saturates), bitwise operations on floats.
      const bool floating_order = (t.floating || t.is_unsigned) && (o.op == MPI_MIN || o.op == MPI_MAX);
      const bool narrow_sum = !t.floating && size <= 2 && o.op == MPI_SUM;
      const bool bitwise_on_float = t.floating && (o.op == MPI_BAND || o.op == MPI_BOR || o.op == MPI_BXOR);
      if (floating_order || narrow_sum || bitwise_on_float) {
        check(kernel == nullptr, std::string(o.name) + " on " + t.name + " must be left to MPI_Reduce_local");
        continue;
      }
      check(kernel != nullptr, std::string(o.name) + " on " + t.name + " should have Canopy's loop");
      if (!kernel) continue;
      for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1001}, std::size_t{4099}}) {
        // Starts one element in (not vector-aligned) and one element short of a cache
        // line further on: the loops take the elements before a line one at a time
        // (shim/reduce_kernels.cpp), fewer, as many as or more than the n elements.
        for (int shift : {0, size, 64 - size}) {
          const std::size_t room = n + static_cast<std::size_t>(64 / size) + 1;
          const auto in = operand(rng, room, size, special);
          const auto inout = operand(rng, room, size, special);
          std::vector<unsigned char> native = inout, mine = inout;
          MPI_Reduce_local(in.data() + shift, native.data() + shift, static_cast<int>(n), t.type, o.op);
          kernel(in.data() + shift, mine.data() + shift, static_cast<std::int64_t>(n));
          check(same(native, mine, t.floating, size), std::string(o.name) + " on " + t.name + ", " + std::to_string(n) +
                                    " elements from byte " + std::to_string(shift) + ": differs from MPI_Reduce_local");
          // The one-pass forms: inout's operand and in's, into a third buffer whose old
          // contents must not matter (random bytes here); the streaming one, where the
          // CPU has it, writes past the caches.
          auto check_into = [&](canopy::shim::ReduceIntoKernel into_kernel, const char* form) {
            std::vector<unsigned char> into = operand(rng, room, size, special);
            std::memcpy(into.data(), native.data(), static_cast<std::size_t>(shift));  // outside the n elements
            std::memcpy(into.data() + shift + n * size, native.data() + shift + n * size, into.size() - shift - n * size);
            into_kernel(inout.data() + shift, in.data() + shift, into.data() + shift, static_cast<std::int64_t>(n));
            check(same(native, into, t.floating, size), std::string(o.name) + " on " + t.name + ", " +
                                      std::to_string(n) + " elements from byte " + std::to_string(shift) + ": the " +
                                      form + " loop differs from MPI_Reduce_local");
          };
          check_into(kernels.into, "one-pass");
          if (kernels.stream) check_into(kernels.stream, "streaming");
        }
      }
      ++pairs;
      std::printf("reduce_kernels_check: %s on %s equals MPI_Reduce_local (bit for bit, NaNs aside)%s\n", o.name, t.name,
                  kernels.stream ? ", streamed too" : "");
    }
  }
  MPI_Op mine;
  MPI_Op_create(user_op, 1, &mine);
  check(canopy::shim::reduce_kernel(mine, MPI_DOUBLE) == nullptr, "a user operation must be left to MPI_Reduce_local");
  MPI_Op_free(&mine);
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
  MPI_Type_commit(&pair);
  check(canopy::shim::reduce_kernel(MPI_SUM, pair) == nullptr, "a derived type must be left to MPI_Reduce_local");
  MPI_Type_free(&pair);
  std::printf("reduce_kernels_check: %d pairs checked, %d failures\n", pairs, failures);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
