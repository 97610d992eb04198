// What the executor needs to know about an MPI datatype to address segments of a
// buffer and to size scratch buffers for it.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace canopy::shim {

struct DatatypeLayout {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::int64_t size = 0;         // bytes of data in one element
  std::int64_t extent = 0;       // stride between consecutive elements
  std::int64_t true_lb = 0;      // first byte touched, relative to the element start
  std::int64_t true_extent = 0;  // span of bytes one element touches
  // A type whose bytes are its data in memory order (a predefined type without padding,
  // or contiguous copies of one), so a buffer of them can be copied with memcpy and sent
  // as raw bytes.
  bool dense = false;

  // Bytes a buffer of n elements spans, and where element 0 starts within it.
  std::int64_t span(std::int64_t n) const { return n <= 0 ? 0 : true_extent + (n - 1) * extent; }
  char* element(void* base, std::int64_t index) const { return static_cast<char*>(base) + index * extent; }
  const char* element(const void* base, std::int64_t index) const {
    return static_cast<const char*>(base) + index * extent;
  }
  // A scratch buffer of span(n) bytes at `storage` holds elements starting here.
  char* origin(void* storage) const { return static_cast<char*>(storage) - true_lb; }
};

// Returns false for layouts Canopy does not address (negative or zero extents).
bool describe_datatype(MPI_Datatype type, DatatypeLayout& out);

// MPI_Pack / MPI_Unpack of `count` elements of `type` to / from `packed`, which holds
// `bytes` = count * type size, in chunks of elements whose packed size fits an int
// (MPI_Pack's sizes and positions are ints; a broadcast may be several GiB). Return the
// first MPI error.
int pack_elements(const void* buffer, int count, MPI_Datatype type, void* packed, std::int64_t bytes, MPI_Comm comm);
int unpack_elements(const void* packed, std::int64_t bytes, void* buffer, int count, MPI_Datatype type,
                    MPI_Comm comm);

// dst[0..n) = src[0..n) element-wise, touching only the type's data bytes. `self_comm`
// is a communicator private to Canopy used for non-dense types.
int copy_elements(const void* src, void* dst, std::int64_t n, const DatatypeLayout& layout, MPI_Comm self_comm);

}  // namespace canopy::shim
