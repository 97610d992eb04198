// shim/warm_code.h: which pages warm_code_around reads, checked against the kernel's own
// account of the process's mappings (/proc/self/maps), not against the ELF headers the
// function reads.
#include "shim/warm_code.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Mapping {
  std::uintptr_t begin = 0, end = 0;
  std::string perms, path;
};

std::vector<Mapping> mappings() {
  std::vector<Mapping> out;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream in(line);
    Mapping m;
    std::string range, offset, device, inode;
    in >> range >> m.perms >> offset >> device >> inode >> m.path;
    const auto dash = range.find('-');
    m.begin = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    out.push_back(m);
  }
  return out;
}

// The bytes the kernel maps executable from the file that holds `address`.
std::size_t executable_bytes_of_file_holding(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  const std::vector<Mapping> all = mappings();
  std::string file;
  for (const Mapping& m : all)
    if (at >= m.begin && at < m.end) file = m.path;
  REQUIRE_FALSE(file.empty());
  std::size_t bytes = 0;
  for (const Mapping& m : all)
    if (m.path == file && m.perms.find('x') != std::string::npos) bytes += m.end - m.begin;
  return bytes;
}

int a_function_of_this_program(int x) { return x + 1; }

}  // namespace

TEST_CASE("Warm code: every page of the executable segments of the object that holds the address") {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  SECTION("the program itself") {
    const void* address = reinterpret_cast<const void*>(&a_function_of_this_program);
    const canopy::shim::WarmedCode warmed = canopy::shim::warm_code_around(address);
    CHECK(warmed.bytes == executable_bytes_of_file_holding(address));
    CHECK(warmed.pages * page == warmed.bytes);
    CHECK(warmed.pages > 0);
  }
  SECTION("a shared library it loaded (the C library)") {
    const void* address = reinterpret_cast<const void*>(&std::strlen);
    const canopy::shim::WarmedCode warmed = canopy::shim::warm_code_around(address);
    CHECK(warmed.bytes == executable_bytes_of_file_holding(address));
    CHECK(warmed.pages * page == warmed.bytes);
  }
}

TEST_CASE("Warm code: an address no loaded object holds reads nothing") {
  const auto block = std::make_unique<char[]>(64);  // the heap
  const canopy::shim::WarmedCode warmed = canopy::shim::warm_code_around(block.get());
  CHECK(warmed.bytes == 0);
  CHECK(warmed.pages == 0);
}
