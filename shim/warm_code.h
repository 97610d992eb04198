// A process's first run of a stretch of Canopy's code, touched once at MPI_Init rather
// than inside a timed call. No MPI: it reads memory the process has mapped already.
#pragma once

#include <cstddef>

namespace canopy::shim {

// What warm_code_around read: the executable segments of one loaded object.
struct WarmedCode {
  std::size_t bytes = 0;  // the segments' bytes, whole pages (0: no loaded object holds the address)
  std::size_t pages = 0;  // pages read, one byte each
};

// Reads one byte of every page of the executable segments (PT_LOAD, PF_X) of the loaded
// object (the program or a shared library) whose segments hold `address`: in
// libcanopy.so, all of Canopy's code. Read-only; what it reads is thrown away.
//
// Why: on a virtual machine whose hypervisor shadows the guest's page tables (this
// project's 2-core VMs run such a kernel: PVM), each process's first access to each page
// of memory costs a trap into the hypervisor, even where the page is in the page cache
// and mapped (MADV_POPULATE_READ does not help). A collective's first call then pays for
// every page of code it runs for the first time in the process: on that VM, 2 ranks,
// MPICH 4.0.2, the first three runs of `shm-recursive-doubling` (auto's first trial of
// a process, OSU's 8 B allreduce row, call 1024) took 76, 21 and 37 us, the next 1-2;
// with the library's code read at MPI_Init (1784 KiB, 0.8-0.9 ms), 14-16 us and then
// 1-2 (docs/performance-history.md, section 33). Where the hardware walks the guest's
// page tables itself, a first access costs no trap, and the reads find pages the page
// cache holds (not measured here: no such machine was lent).
WarmedCode warm_code_around(const void* address);

}  // namespace canopy::shim
