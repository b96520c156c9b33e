# Installation: `cmake --install build --prefix DIR` puts the libraries, their headers, the
# programs and a CMake package in DIR, so that another project finds the library with
# `find_package(torusgate CONFIG REQUIRED)` and links `torusgate::circuits`, `torusgate::cpu`,
# `torusgate::gpu`, `torusgate::backends`, `torusgate::fpga_fft` or `torusgate::core` (README,
# "Use it from your own project"). Included from the top-level CMakeLists.txt after the
# libraries and programs.
include(CMakePackageConfigHelpers)

set(TORUSGATE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/torusgate)

install(TARGETS torusgate_core torusgate_cpu torusgate_gpu torusgate_circuits torusgate_fpga_fft
                torusgate_backends
        EXPORT torusgateTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# vec8.hpp is the library's own vector code, compiled for the build machine's registers; its
# sources use it and no installed header includes it.
foreach(part core cpu gpu circuits fpga_fft backends)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${part}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "vec8.hpp" EXCLUDE)
endforeach()
install(FILES ${TORUSGATE_GENERATED_INCLUDE}/torusgate/core/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/torusgate/core)
install(EXPORT torusgateTargets NAMESPACE torusgate:: DESTINATION ${TORUSGATE_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/torusgateConfig.cmake.in
  ${PROJECT_BINARY_DIR}/torusgateConfig.cmake INSTALL_DESTINATION ${TORUSGATE_CMAKE_DIR})
# 0.x: a new minor version may change the API, so only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/torusgateConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/torusgateConfig.cmake
              ${PROJECT_BINARY_DIR}/torusgateConfigVersion.cmake
        DESTINATION ${TORUSGATE_CMAKE_DIR})

# The same for builds without CMake: lib/pkgconfig/torusgate.pc, whose prefix is its own folder
# (${pcfiledir}) up to the install prefix, so that any --prefix works. The libraries are static,
# so Libs names what they link: OpenMP, threads, FFTW3 and libsodium (Requires) and, with the
# CUDA backend, cudart and cuFFT with their folder as run path. OpenMP's flag is in Libs only:
# no installed header uses OpenMP, so the user's own sources are not compiled with it.
file(RELATIVE_PATH TORUSGATE_PC_UP /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" TORUSGATE_PC_UP "${TORUSGATE_PC_UP}")
set(TORUSGATE_PC_OPENMP "${OpenMP_CXX_FLAGS}")
set(TORUSGATE_PC_CUDA "")
if(TORUSGATE_HAVE_CUDA)
  set(TORUSGATE_PC_CUDA
      " -L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcudart -lcufft")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/torusgate.pc.in ${PROJECT_BINARY_DIR}/torusgate.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/torusgate.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The documentation the programs' help and messages cite (README.md and docs/*.md, not the
# measured results), under share/doc/torusgate.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "results" EXCLUDE)

# The programs (the CLI, the main job, the benchmarks and studies), not the demos or the
# emulated builds. They keep the run path of the libraries they link outside the system's
# folders (cudart and cuFFT under the CUDA toolkit), so that they start from the prefix.
if(TORUSGATE_BUILD_APPS)
  set(programs torusgate linear_regression bench_gates bench_circuits circuit_costs
      compare_backends noise_study fpga_fft)
  set_target_properties(${programs} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS ${programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
