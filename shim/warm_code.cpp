#include "shim/warm_code.h"

#include <link.h>
#include <unistd.h>

#include <cstdint>

namespace canopy::shim {

namespace {

struct Search {
  std::uintptr_t address;
  WarmedCode warmed;
};

std::uintptr_t page_bytes() {
  const long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<std::uintptr_t>(page) : 4096;
}

// The loaded object's segment [begin, end) in this process's memory.
struct Span {
  std::uintptr_t begin, end;
};
Span span_of(const dl_phdr_info& object, const ElfW(Phdr) & segment) {
  const std::uintptr_t begin = object.dlpi_addr + segment.p_vaddr;
  return {begin, begin + segment.p_memsz};
}

int read_if_holder(dl_phdr_info* object, std::size_t, void* data) {
  Search& search = *static_cast<Search*>(data);
  bool holds = false;
  for (int i = 0; i < object->dlpi_phnum && !holds; ++i) {
    const ElfW(Phdr)& segment = object->dlpi_phdr[i];
    const Span span = span_of(*object, segment);
    holds = segment.p_type == PT_LOAD && search.address >= span.begin && search.address < span.end;
  }
  if (!holds) return 0;  // on to the next object
  const std::uintptr_t page = page_bytes();
  char sum = 0;
  for (int i = 0; i < object->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = object->dlpi_phdr[i];
    // (Code the loader maps execute-only, where a platform allows it, is not read.)
    if (segment.p_type != PT_LOAD || !(segment.p_flags & PF_X) || !(segment.p_flags & PF_R) || segment.p_memsz == 0)
      continue;
    const Span span = span_of(*object, segment);
    // A segment is mapped in whole pages from the page that holds its first byte.
    std::size_t pages = 0;
    for (std::uintptr_t at = span.begin / page * page; at < span.end; at += page, ++pages)
      sum = static_cast<char>(sum + *reinterpret_cast<const volatile char*>(at));
    search.warmed.pages += pages;
    search.warmed.bytes += pages * page;
  }
  [[maybe_unused]] volatile char sink = sum;
  return 1;  // found: stop
}

}  // namespace

WarmedCode warm_code_around(const void* address) {
  Search search{reinterpret_cast<std::uintptr_t>(address), {}};
  dl_iterate_phdr(read_if_holder, &search);
  return search.warmed;
}

}  // namespace canopy::shim
