#include "shim/reduce_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Each loop is built for AVX-512, AVX2 and the baseline; the loader picks the best the
// CPU has (GCC and Clang function multiversioning on x86-64 with glibc's ifunc).
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define CANOPY_KERNEL __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef CANOPY_KERNEL
#define CANOPY_KERNEL
#endif

namespace canopy::shim {

namespace {

// The operations, each as MPICH writes it with a = inout, b = in. Integer sums and
// products go through the unsigned type: the same bits as two's complement wrapping,
// without signed overflow's undefined behaviour. The streaming loops apply them to
// AVX vectors, always inlined into code built for AVX (GCC's notes on how such a call
// would pass vectors otherwise are off for this file: -Wno-psabi, shim/CMakeLists.txt).
struct Sum {
  template <typename T>
  __attribute__((always_inline)) static T apply(T a, T b) {
    return a + b;
  }
};
struct Prod {
  template <typename T>
  __attribute__((always_inline)) static T apply(T a, T b) {
    // Integers narrower than int are promoted to int, where 0xffff * 0xffff overflows:
    // they multiply as unsigned int, whose low bits are the same. (A vector of them
    // multiplies lane by lane without promotion.)
    if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(unsigned)) {
      return static_cast<T>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
    } else {
      return a * b;
    }
  }
};
struct Min {
  template <typename T>
  __attribute__((always_inline)) static T apply(T a, T b) {
    return a < b ? a : b;
  }
};
struct Max {
  template <typename T>
  __attribute__((always_inline)) static T apply(T a, T b) {
    return a > b ? a : b;
  }
};
struct BitAnd {
  template <typename T>
  __attribute__((always_inline)) static T apply(T a, T b) {
    return a & b;
  }
};
struct BitOr {
  template <typename T>
  __attribute__((always_inline)) static T apply(T a, T b) {
    return a | b;
  }
};
struct BitXor {
  template <typename T>
  __attribute__((always_inline)) static T apply(T a, T b) {
    return a ^ b;
  }
};

// The elements before `out`'s first cache line: the loops below take them one at a time
// first, so their vector stores fill whole lines, and where the operands lie as `out`
// does against cache lines (staging.h: the ring puts staged data where the buffer it
// came from lay) no vector load straddles two lines either. GCC vectorises these loops
// with unaligned loads and stores and no such start; on the AMD EPYC VM a 1 MiB 2-rank
// allreduce through the ring between buffers 16 bytes past a page ran 8-12% slower
// than between page-aligned ones (canopy-bench-floor --offset 16), and with the start
// and the ring's matching offset as fast. An element at a time, so the results are the
// same bits (each element's operation is the same IEEE or integer operation).
template <typename T>
__attribute__((always_inline)) inline std::int64_t head_before_line(const void* out, std::int64_t n) {
  constexpr std::uintptr_t kLine = 64;
  const auto at = reinterpret_cast<std::uintptr_t>(out);
  if (at % sizeof(T) != 0) return 0;  // never reaches a line element by element
  return std::min<std::int64_t>(n, static_cast<std::int64_t>((kLine - at % kLine) % kLine / sizeof(T)));
}

// Inlined into each multiversioned kernel below, so it is vectorised for that kernel's
// instruction set.
template <typename T, typename Op>
__attribute__((always_inline)) inline void loop(const void* in, void* inout, std::int64_t n) {
  const T* __restrict b = static_cast<const T*>(in);
  T* __restrict a = static_cast<T*>(inout);
  std::int64_t i = 0;
  for (const std::int64_t head = head_before_line<T>(inout, n); i < head; ++i) a[i] = static_cast<T>(Op::apply(a[i], b[i]));
  for (; i < n; ++i) a[i] = static_cast<T>(Op::apply(a[i], b[i]));
}

// out[i] = a[i] (op) b[i]: the same operation with a in inout's place, written to a third
// buffer, so that combining two operands into a fresh buffer takes one pass.
template <typename T, typename Op>
__attribute__((always_inline)) inline void loop_into(const void* a, const void* b, void* out, std::int64_t n) {
  const T* __restrict x = static_cast<const T*>(a);
  const T* __restrict y = static_cast<const T*>(b);
  T* __restrict o = static_cast<T*>(out);
  std::int64_t i = 0;
  for (const std::int64_t head = head_before_line<T>(out, n); i < head; ++i) o[i] = static_cast<T>(Op::apply(x[i], y[i]));
  for (; i < n; ++i) o[i] = static_cast<T>(Op::apply(x[i], y[i]));
}

// GCC only: Clang 14 rejects passing AVX vectors to a function not built for AVX even
// where the call is inlined (an error, not a warning), so a Clang build (tools/fuzz.sh's)
// has no streaming loops and copies and combines past 1 MiB as before.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// out[i] = a[i] (op) b[i] with non-temporal stores: whole vectors written past the
// caches, without first reading the lines they fill. The operation is the scalar one
// applied per lane through GCC's vector extensions (the same IEEE operation or wrapping
// integer operation as loop_into's), so the results are loop_into's bit for bit. The
// first elements, until `out` is vector-aligned, and the last few are scalar; a store
// fence at the end orders the streamed stores before whatever this thread does next
// (another rank may read the buffer once this call returns).
#define CANOPY_STREAM_LOOP(isa, bytes, store_type, store)                                          \
  template <typename T, typename Op>                                                               \
  __attribute__((target(isa))) void stream_##bytes(const void* a, const void* b, void* out,      \
                                                   std::int64_t n) {                             \
    typedef T Vector __attribute__((vector_size(bytes)));                                          \
    const T* x = static_cast<const T*>(a);                                                         \
    const T* y = static_cast<const T*>(b);                                                         \
    T* o = static_cast<T*>(out);                                                                   \
    constexpr std::int64_t lanes = (bytes) / sizeof(T);                                            \
    std::int64_t i = 0;                                                                            \
    for (; i < n && reinterpret_cast<std::uintptr_t>(o + i) % (bytes) != 0; ++i)                   \
      o[i] = static_cast<T>(Op::apply(x[i], y[i]));                                                \
    for (; i + lanes <= n; i += lanes) {                                                           \
      Vector u, v;                                                                                 \
      std::memcpy(&u, x + i, sizeof u);                                                            \
      std::memcpy(&v, y + i, sizeof v);                                                            \
      const Vector r = Op::apply(u, v);                                                            \
      store(reinterpret_cast<store_type*>(o + i), reinterpret_cast<const store_type&>(r));         \
    }                                                                                              \
    for (; i < n; ++i) o[i] = static_cast<T>(Op::apply(x[i], y[i]));                               \
    _mm_sfence();                                                                                  \
  }
CANOPY_STREAM_LOOP("avx512f", 64, __m512i, _mm512_stream_si512)
CANOPY_STREAM_LOOP("avx2", 32, __m256i, _mm256_stream_si256)

// The widest streaming loop this CPU runs; none without AVX2 (the caller then copies and
// combines through the caches).
template <typename T, typename Op>
ReduceIntoKernel streaming() {
  if (__builtin_cpu_supports("avx512f")) return stream_64<T, Op>;
  if (__builtin_cpu_supports("avx2")) return stream_32<T, Op>;
  return nullptr;
}
#define CANOPY_STREAMING_OF(T, Op) streaming<T, Op>()
#else
#define CANOPY_STREAMING_OF(T, Op) nullptr
#endif

#define CANOPY_DEFINE_KERNEL(name, T, Op)                                                           \
  CANOPY_KERNEL void name(const void* in, void* inout, std::int64_t n) { loop<T, Op>(in, inout, n); } \
  CANOPY_KERNEL void name##_into(const void* a, const void* b, void* out, std::int64_t n) {           \
    loop_into<T, Op>(a, b, out, n);                                                                 \
  }                                                                                                 \
  ReduceIntoKernel name##_stream() { return CANOPY_STREAMING_OF(T, Op); }

// Wrapping arithmetic and bitwise operations: by width only.
#define CANOPY_WIDTH_KERNELS(bits)                            \
  CANOPY_DEFINE_KERNEL(prod_u##bits, std::uint##bits##_t, Prod)   \
  CANOPY_DEFINE_KERNEL(band_u##bits, std::uint##bits##_t, BitAnd) \
  CANOPY_DEFINE_KERNEL(bor_u##bits, std::uint##bits##_t, BitOr)   \
  CANOPY_DEFINE_KERNEL(bxor_u##bits, std::uint##bits##_t, BitXor) \
  CANOPY_DEFINE_KERNEL(min_i##bits, std::int##bits##_t, Min)      \
  CANOPY_DEFINE_KERNEL(max_i##bits, std::int##bits##_t, Max)
CANOPY_WIDTH_KERNELS(8)
CANOPY_WIDTH_KERNELS(16)
CANOPY_WIDTH_KERNELS(32)
CANOPY_WIDTH_KERNELS(64)
CANOPY_DEFINE_KERNEL(sum_u32, std::uint32_t, Sum)
CANOPY_DEFINE_KERNEL(sum_u64, std::uint64_t, Sum)
CANOPY_DEFINE_KERNEL(sum_f32, float, Sum)
CANOPY_DEFINE_KERNEL(prod_f32, float, Prod)
CANOPY_DEFINE_KERNEL(sum_f64, double, Sum)
CANOPY_DEFINE_KERNEL(prod_f64, double, Prod)

enum class Number { Signed, Unsigned, Floating };

// One operation's two loops (or none).
#define CANOPY_PAIR(name) ReduceKernels { name, name##_into, name##_stream() }
#define CANOPY_PAIR_IF(cond, name) ((cond) ? CANOPY_PAIR(name) : ReduceKernels{})

struct Kernels {
  ReduceKernels sum, prod, min, max, band, bor, bxor;
};

#define CANOPY_INTEGER_KERNELS(bits, sum)                                                                  \
  Kernels {                                                                                               \
    sum, CANOPY_PAIR(prod_u##bits), CANOPY_PAIR_IF(is_signed, min_i##bits), CANOPY_PAIR_IF(is_signed, max_i##bits), \
        CANOPY_PAIR(band_u##bits), CANOPY_PAIR(bor_u##bits), CANOPY_PAIR(bxor_u##bits)                     \
  }

Kernels integer_kernels(int bytes, bool is_signed) {
  switch (bytes) {
    case 1: return CANOPY_INTEGER_KERNELS(8, ReduceKernels{});
    case 2: return CANOPY_INTEGER_KERNELS(16, ReduceKernels{});
    case 4: return CANOPY_INTEGER_KERNELS(32, CANOPY_PAIR(sum_u32));
    case 8: return CANOPY_INTEGER_KERNELS(64, CANOPY_PAIR(sum_u64));
    default: return {};
  }
}

// The kernels of one predefined type, by what its elements are. A size that does not
// match its C type (a Fortran INTEGER built 8 bytes wide) gets none.
Kernels kernels_of(MPI_Datatype type) {
  struct Known {
    MPI_Datatype type;
    Number number;
  };
  // Handles are compile-time constants in MPICH and addresses of MPI's own objects in
  // Open MPI: comparing them is valid in both.
  const Known known[] = {
      {MPI_DOUBLE, Number::Floating},         {MPI_FLOAT, Number::Floating},
      {MPI_DOUBLE_PRECISION, Number::Floating}, {MPI_REAL, Number::Floating},
      {MPI_INT, Number::Signed},              {MPI_LONG, Number::Signed},
      {MPI_LONG_LONG, Number::Signed},        {MPI_LONG_LONG_INT, Number::Signed},
      {MPI_SHORT, Number::Signed},            {MPI_SIGNED_CHAR, Number::Signed},
      {MPI_INT8_T, Number::Signed},           {MPI_INT16_T, Number::Signed},
      {MPI_INT32_T, Number::Signed},          {MPI_INT64_T, Number::Signed},
      {MPI_INTEGER, Number::Signed},          {MPI_UNSIGNED, Number::Unsigned},
      {MPI_UNSIGNED_LONG, Number::Unsigned},  {MPI_UNSIGNED_LONG_LONG, Number::Unsigned},
      {MPI_UNSIGNED_SHORT, Number::Unsigned}, {MPI_UNSIGNED_CHAR, Number::Unsigned},
      {MPI_UINT8_T, Number::Unsigned},        {MPI_UINT16_T, Number::Unsigned},
      {MPI_UINT32_T, Number::Unsigned},       {MPI_UINT64_T, Number::Unsigned},
  };
  for (const Known& k : known) {
    if (k.type != type) continue;
    int bytes = 0;
    if (PMPI_Type_size(type, &bytes) != MPI_SUCCESS) return {};
    if (k.number != Number::Floating) return integer_kernels(bytes, k.number == Number::Signed);
    if (bytes == 8) return {CANOPY_PAIR(sum_f64), CANOPY_PAIR(prod_f64), {}, {}, {}, {}, {}};
    if (bytes == 4) return {CANOPY_PAIR(sum_f32), CANOPY_PAIR(prod_f32), {}, {}, {}, {}, {}};
    return {};
  }
  return {};
}

}  // namespace

namespace {

ReduceKernels look_up(MPI_Op op, MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return {};
  const Kernels k = kernels_of(type);
  if (op == MPI_SUM) return k.sum;
  if (op == MPI_PROD) return k.prod;
  if (op == MPI_MIN) return k.min;
  if (op == MPI_MAX) return k.max;
  if (op == MPI_BAND) return k.band;
  if (op == MPI_BOR) return k.bor;
  if (op == MPI_BXOR) return k.bxor;
  return {};
}

}  // namespace

ReduceKernels reduce_kernels(MPI_Op op, MPI_Datatype type) {
  // Asked on every MPI_Reduce that runs a schedule; a program reduces with one or two
  // pairs, so each thread keeps its last answer (about 24 handle comparisons and an
  // MPI_Type_size saved). A freed handle MPI hands out again cannot make it wrong: only
  // predefined handles, which are never freed, have loops, so a reused user handle
  // gets null as its predecessor did.
  struct Last {
    MPI_Op op = MPI_OP_NULL;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    ReduceKernels kernels;
  };
  thread_local Last last;
  if (op == last.op && type == last.type) return last.kernels;
  last = {op, type, look_up(op, type)};
  return last.kernels;
}

}  // namespace canopy::shim
