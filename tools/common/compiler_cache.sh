# Sourced by tools/build.sh and tools/test-openmpi.sh. Sets compiler_cache to the CMake
# arguments that put ccache in front of the C and C++ compilers where ccache is
# installed, and that take it away where it is not (a build directory remembers its
# launcher). What does not use MPI (the planner, config and most tools: about half of
# the compile time) then compiles once for both the MPICH and the Open MPI build.
# CCACHE_NOHASHDIR: the two builds differ only in their directory, which ccache would
# otherwise hash because of -g. A reused object's debug information names the first
# build's directory; its source paths are absolute, so debuggers still find the code.
if command -v ccache >/dev/null; then
  export CCACHE_NOHASHDIR=1
  compiler_cache=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
else
  compiler_cache=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER=)
fi
