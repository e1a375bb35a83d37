# `cmake --install build [--prefix DIR]`: the runtime for services that embed it,
# and the tools.
#
#   bin/strata-server, bin/strata (with the compiler; share/strata/ccodegen holds
#     what its --byoc ccodegen compiles generated C with)
#   lib/libstrata_*.a, lib/libstrata_sim_npu.so (found by the runtime as ../lib
#     of the running program)
#   include/strata/{support,serialization,vm}/*.h (with the generated schema header)
#   lib/cmake/Strata/StrataConfig.cmake (+ version file, targets)
#
# A service then does find_package(Strata 0.1 REQUIRED) and links
# Strata::runtime: the VM and the library kernels, never LLVM or the compiler
# (tests: scripts/check_install.sh builds and runs a consumer project).
# Not in the Python wheel: pip installs only the package (python/CMakeLists.txt).
if(SKBUILD)
  return()
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(strata_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS strata_support strata_abi strata_serialization strata_bytecode strata_vm strata_kernels strata_runtime
        EXPORT StrataTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT StrataTargets NAMESPACE Strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
foreach(dir support abi serialization vm vm/bytecode)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/${dir}/ DESTINATION include/strata/${dir}
          FILES_MATCHING PATTERN "*.h" PATTERN "devices" EXCLUDE PATTERN "tensor_io" EXCLUDE PATTERN "bytecode" EXCLUDE)
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/generated/serialization/executable_generated.h
        DESTINATION include/strata/serialization)
install(TARGETS strata_sim_npu LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS strata-server RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET strata)
  install(TARGETS strata RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # What `strata compile --byoc ccodegen` compiles its C with, found relative to
  # bin/strata (compiler/byoc/ccodegen): the kernel ABI header, the sample
  # library's header and archive.
  install(FILES ${CMAKE_SOURCE_DIR}/abi/kernel_abi.h DESTINATION share/strata/ccodegen/include/abi)
  install(FILES ${CMAKE_SOURCE_DIR}/kernels/sample_byoc/sample_byoc.h
          DESTINATION share/strata/ccodegen/include/kernels/sample_byoc)
  install(TARGETS strata_sample_byoc ARCHIVE DESTINATION share/strata/ccodegen/lib)
endif()

configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/StrataConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/StrataConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/StrataConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/StrataConfig.cmake ${CMAKE_BINARY_DIR}/StrataConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
