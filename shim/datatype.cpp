#include "shim/datatype.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>

namespace canopy::shim {

// Tag of a rank's messages to itself when copying non-dense elements; schedule
// messages use tags 0..32766 (one per segment), so this never matches them.
constexpr int kSelfCopyTag = 32767;

namespace {

bool is_predefined(MPI_Datatype type) {
  int num_integers = 0, num_addresses = 0, num_datatypes = 0, combiner = 0;
  return PMPI_Type_get_envelope(type, &num_integers, &num_addresses, &num_datatypes, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

// Whether the elements `type` is built of lie in memory in type-map order: true for a
// predefined type, and for contiguous copies or duplicates of a dense type (a type
// MPI_Type_contiguous made is how programs pass counts over INT_MAX). Other combiners
// (vector, indexed, struct, resized) may reorder or skip bytes; they answer false even
// where they happen not to, and are packed. For a derived type this asks MPI for its
// contents (a handle to create and free) on each call it is described for: still far
// less than packing it.
bool built_in_memory_order(MPI_Datatype type) {
  int num_integers = 0, num_addresses = 0, num_datatypes = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &num_integers, &num_addresses, &num_datatypes, &combiner) != MPI_SUCCESS)
    return false;
  if (combiner == MPI_COMBINER_NAMED) return true;
  if ((combiner != MPI_COMBINER_CONTIGUOUS && combiner != MPI_COMBINER_DUP) || num_datatypes != 1 ||
      num_addresses != 0 || num_integers > 1)
    return false;
  int count = 0;
  MPI_Aint no_address = 0;
  MPI_Datatype old = MPI_DATATYPE_NULL;
  if (PMPI_Type_get_contents(type, num_integers, 0, 1, &count, &no_address, &old) != MPI_SUCCESS) return false;
  DatatypeLayout inner;
  const bool dense = describe_datatype(old, inner) && inner.dense;
  // get_contents hands out new handles for derived types; predefined ones must not be freed.
  if (!is_predefined(old)) PMPI_Type_free(&old);
  return dense;
}

}  // namespace

namespace {

// The layouts of the first predefined types described: a predefined handle always names
// the same type (none can be freed), so its layout, once asked of MPI, holds for the
// job. Decision: describing a type asks MPI four times (size, extent, true extent,
// envelope), 40-60 ns of a 0.3-0.6 us two-rank allreduce of 8 B on Open MPI (perf, 2
// ranks), on every call; a program passes one or a few types. Entries are only ever
// appended, each published by the count (readers take no lock; writers, on a miss, one).
struct PredefinedLayouts {
  static constexpr int kEntries = 16;
  DatatypeLayout entries[kEntries];
  std::atomic<int> count{0};
  std::mutex adding;

  bool find(MPI_Datatype type, DatatypeLayout& out) const {
    const int n = count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i)
      if (entries[i].type == type) {
        out = entries[i];
        return true;
      }
    return false;
  }
  void add(const DatatypeLayout& layout) {
    std::lock_guard<std::mutex> hold(adding);
    const int n = count.load(std::memory_order_relaxed);
    if (n == kEntries) return;  // full: later types ask MPI each time
    for (int i = 0; i < n; ++i)
      if (entries[i].type == layout.type) return;
    entries[n] = layout;
    count.store(n + 1, std::memory_order_release);
  }
};

PredefinedLayouts& predefined_layouts() {
  static PredefinedLayouts layouts;
  return layouts;
}

}  // namespace

bool describe_datatype(MPI_Datatype type, DatatypeLayout& out) {
  if (predefined_layouts().find(type, out)) return true;
  MPI_Count size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS) return false;
  if (PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS) return false;
  if (PMPI_Type_get_true_extent_x(type, &true_lb, &true_extent) != MPI_SUCCESS) return false;
  if (size <= 0 || extent <= 0 || true_extent <= 0) return false;
  out.type = type;
  out.size = size;
  out.extent = extent;
  out.true_lb = true_lb;
  out.true_extent = true_extent;
  // Dense: MPI_Pack of an element gives its bytes as they lie from its start, so a
  // buffer of them moves as raw bytes whatever datatype another rank describes the same
  // message with (MPI matches signatures, and here signature order is memory order).
  // size == extent rules out padding (MPI_DOUBLE_INT has some).
  out.dense = size == extent && lb == 0 && true_lb == 0 && true_extent == extent && built_in_memory_order(type);
  if (is_predefined(type)) predefined_layouts().add(out);
  return true;
}

namespace {

// Calls `step(first element, elements, first packed byte, packed bytes)` over chunks of
// at most INT_MAX packed bytes; returns the first error.
template <typename Step>
int by_chunks(int count, MPI_Datatype type, std::int64_t bytes, Step step) {
  if (count <= 0 || bytes <= 0) return MPI_SUCCESS;
  const std::int64_t element_bytes = bytes / count;  // the caller's count * type size
  const std::int64_t per = std::max<std::int64_t>(1, INT_MAX / element_bytes);
  MPI_Count lb = 0, extent = 0;
  if (const int err = PMPI_Type_get_extent_x(type, &lb, &extent); err != MPI_SUCCESS) return err;
  for (std::int64_t first = 0; first < count; first += per) {
    const std::int64_t n = std::min<std::int64_t>(per, count - first);
    if (const int err = step(first * extent, static_cast<int>(n), first * element_bytes, n * element_bytes);
        err != MPI_SUCCESS)
      return err;
  }
  return MPI_SUCCESS;
}

}  // namespace

int pack_elements(const void* buffer, int count, MPI_Datatype type, void* packed, std::int64_t bytes, MPI_Comm comm) {
  return by_chunks(count, type, bytes, [&](std::int64_t offset, int n, std::int64_t at, std::int64_t size) {
    int position = 0;
    return PMPI_Pack(static_cast<const char*>(buffer) + offset, n, type, static_cast<char*>(packed) + at,
                     static_cast<int>(size), &position, comm);
  });
}

int unpack_elements(const void* packed, std::int64_t bytes, void* buffer, int count, MPI_Datatype type,
                    MPI_Comm comm) {
  return by_chunks(count, type, bytes, [&](std::int64_t offset, int n, std::int64_t at, std::int64_t size) {
    int position = 0;
    return PMPI_Unpack(static_cast<const char*>(packed) + at, static_cast<int>(size), &position,
                       static_cast<char*>(buffer) + offset, n, type, comm);
  });
}

int copy_elements(const void* src, void* dst, std::int64_t n, const DatatypeLayout& layout, MPI_Comm self_comm) {
  if (n <= 0 || src == dst) return MPI_SUCCESS;
  if (layout.dense) {
    std::memcpy(dst, src, static_cast<std::size_t>(n * layout.size));
    return MPI_SUCCESS;
  }
  // Let MPI walk the type map: a message to ourselves on Canopy's private
  // communicator, in chunks that fit an int count.
  int rank = 0;
  PMPI_Comm_rank(self_comm, &rank);
  for (std::int64_t done = 0; done < n;) {
    const int chunk = static_cast<int>(std::min<std::int64_t>(n - done, INT_MAX));
    const int err = PMPI_Sendrecv(layout.element(src, done), chunk, layout.type, rank, kSelfCopyTag,
                                  layout.element(dst, done), chunk, layout.type, rank, kSelfCopyTag, self_comm,
                                  MPI_STATUS_IGNORE);
    if (err != MPI_SUCCESS) return err;
    done += chunk;
  }
  return MPI_SUCCESS;
}

}  // namespace canopy::shim
