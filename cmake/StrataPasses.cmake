# Passes register themselves where they are defined (STRATA_REGISTER_PASS in
# compiler/transform/pass.h). A static library drops object files nothing
# references, so each library that defines passes gets one generated source
# that references them all:
#
#   strata_collect_passes(strata_backend_vm BackendVmPasses)
#
# adds <build>/generated/strata_backend_vm_passes.cc to the library, defining
# `std::vector<strata::transform::Pass> strata::generated::BackendVmPasses()`,
# which returns every pass the library's sources register (the registry of the
# library, or the layer above it, calls it). The list is rebuilt when a source
# changes and rewritten only when the set of passes does.
function(strata_collect_passes library function)
  get_target_property(sources ${library} SOURCES)
  set(list_file ${CMAKE_BINARY_DIR}/generated/${library}_pass_sources.txt)
  set(output ${CMAKE_BINARY_DIR}/generated/${library}_passes.cc)
  string(REPLACE ";" "\n" lines "${sources}")
  file(WRITE ${list_file}.new "${lines}\n")
  configure_file(${list_file}.new ${list_file} COPYONLY)  # rewritten only when it differs
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DSOURCES_FILE=${list_file} -DOUTPUT=${output} -DFUNCTION=${function}
            -DLIBRARY=${library} -P ${CMAKE_SOURCE_DIR}/cmake/collect_passes.cmake
    DEPENDS ${sources} ${list_file} ${CMAKE_SOURCE_DIR}/cmake/collect_passes.cmake
    COMMENT "Collecting the passes of ${library}"
    VERBATIM)
  target_sources(${library} PRIVATE ${output})
endfunction()
