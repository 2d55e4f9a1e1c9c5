# Third-party dependencies, all from Debian 12 packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(fmt 9 REQUIRED CONFIG)
# Debian's UCX config does not link ucs/uct transitively: name all three where ucp is used.
find_package(ucx REQUIRED CONFIG)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.9)

if(WEFT_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED CONFIG)
endif()

# Optional: MPI for perf/ baselines; CUDA is detected and reported, never required.
find_package(MPI COMPONENTS C)
# Optional: PMIx headers (libpmix-dev) let weftCommInitFromEnv take the unique id from mpirun's or
# srun's PMIx server; libpmix.so.2 itself is loaded at run time.
pkg_get_variable(WEFT_PMIX_PKG_INCLUDEDIR pmix includedir)
find_path(WEFT_PMIX_INCLUDE_DIR pmix.h HINTS ${WEFT_PMIX_PKG_INCLUDEDIR})
if(WEFT_PMIX_INCLUDE_DIR)
  message(STATUS "weft: PMIx headers in ${WEFT_PMIX_INCLUDE_DIR} (mpirun/srun rendezvous on)")
else()
  message(STATUS "weft: no PMIx headers (libpmix-dev): mpirun/srun need MASTER_ADDR/MASTER_PORT")
endif()
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  message(STATUS "weft: CUDA compiler found at ${CMAKE_CUDA_COMPILER} (GPU paths: not built yet)")
endif()
