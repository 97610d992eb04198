// Marks a function as part of libcanopy.so's interface (an MPI entry point it replaces,
// or the canopy_* C API); everything else in the library is hidden (shim/CMakeLists.txt).
#pragma once

#define CANOPY_EXPORT extern "C" __attribute__((visibility("default")))
