#include "shim/native_reduce.h"

#include "shim/datatype.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

namespace canopy::shim {

namespace {

// Reads a decimal number at `at` (none: -1) and moves past it.
int read_number(std::string_view text, std::size_t& at) {
  int value = -1;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9' && value < 100000)
    value = (value < 0 ? 0 : value * 10) + (text[at++] - '0');
  return value;
}

// A copy of `count` elements of `datatype` from `from`, laid out as they are there
// (`at` points where `from` would), or null where it cannot be made (a layout Canopy
// does not address, no memory, an MPI error). A dense type is one memcpy; others go
// through MPI's pack and unpack (no message, so nothing meets the program's own on
// MPI_COMM_SELF), which touch the data alone: the holes of the span may not even be
// memory the program owns.
std::unique_ptr<char[]> copy_elements(const void* from, int count, MPI_Datatype datatype, char*& at) {
  DatatypeLayout layout;
  if (!describe_datatype(datatype, layout)) return nullptr;
  const std::int64_t span = layout.span(count);
  std::unique_ptr<char[]> copy(new (std::nothrow) char[span > 0 ? span : 1]);
  if (!copy) return nullptr;
  at = layout.origin(copy.get());
  const std::int64_t bytes = static_cast<std::int64_t>(count) * layout.size;
  if (layout.dense) {
    std::memcpy(at, from, static_cast<std::size_t>(bytes));
    return copy;
  }
  std::unique_ptr<char[]> packed(new (std::nothrow) char[bytes > 0 ? bytes : 1]);
  if (!packed || pack_elements(from, count, datatype, packed.get(), bytes, MPI_COMM_SELF) != MPI_SUCCESS ||
      unpack_elements(packed.get(), bytes, at, count, datatype, MPI_COMM_SELF) != MPI_SUCCESS)
    return nullptr;
  return copy;
}

}  // namespace

bool in_place_reduce_at_nonzero_root_crashes(std::string_view library_version) {
  constexpr std::string_view kPrefix = "MPICH Version:";
  if (library_version.substr(0, kPrefix.size()) != kPrefix) return false;
  std::size_t at = kPrefix.size();
  while (at < library_version.size() && (library_version[at] == ' ' || library_version[at] == '\t')) ++at;
  const int major = read_number(library_version, at);
  int minor = 0, patch = 0;
  if (at < library_version.size() && library_version[at] == '.') minor = read_number(library_version, ++at);
  if (at < library_version.size() && library_version[at] == '.') patch = read_number(library_version, ++at);
  if (major < 0 || minor < 0) return false;
  // 4.0.x and 4.1.0-4.1.1; a patch number that cannot be read (a "4.1" or a "4.1a1"
  // release) counts as 0.
  return major == 4 && (minor == 0 || (minor == 1 && patch <= 1));
}

bool this_mpi_crashes_on_in_place_reduce_at_nonzero_root() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (PMPI_Get_library_version(version, &length) != MPI_SUCCESS) return false;
  return in_place_reduce_at_nonzero_root_crashes(std::string_view(version, static_cast<std::size_t>(length)));
}

int native_reduce_with_copy(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                            MPI_Comm comm) {
  int inter = 1, rank = -1;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
      rank != root)
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  char* at = nullptr;
  const std::unique_ptr<char[]> copy = copy_elements(recvbuf, count, datatype, at);
  if (!copy) return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  return PMPI_Reduce(at, recvbuf, count, datatype, op, root, comm);
}

}  // namespace canopy::shim
