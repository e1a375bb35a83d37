# Layers the build enforces.
#
# Every folder of Strata is one library, declared with strata_add_layer: its
# sources, the folders it owns and the libraries below it that it links. After
# all of them are declared, strata_enforce_layers() gives each library a build
# step that scans its files' `#include "..."` lines: an include of a folder that
# belongs to a library this one does not link (directly or through others) fails
# the build with the file, the line and the edge that is missing. A back-arrow
# (op/ including transform/, serialization/ including vm/) cannot land.
#
# A folder belongs to the library that declared the longest prefix of it, so
# vm/bytecode/ belongs to strata_bytecode even though vm/ is strata_vm. Includes
# of folders no library declared (generated headers, system headers) are not
# checked.

define_property(GLOBAL PROPERTY STRATA_LAYER_TARGETS BRIEF_DOCS "strata layers" FULL_DOCS "targets of strata_add_layer")

# strata_add_layer(<target> STATIC|INTERFACE|SHARED|MODULE DIRS <dir>... [SOURCES <file>...]
#                  [LINKS <target>...] [PRIVATE_LINKS <target>...] [USES <target>...])
#   DIRS           folders (relative to the source root) the target owns; without
#                  SOURCES, its sources are the *.cc / *.c files under them that no
#                  longer-prefix layer owns.
#   LINKS          strata libraries linked PUBLIC (their headers are part of this one's interface).
#   PRIVATE_LINKS  strata libraries linked PRIVATE.
#   USES           libraries whose headers this one reads without linking them
#                  (a header compiled into generated code, say): allowed includes,
#                  no link edge.
function(strata_add_layer target kind)
  cmake_parse_arguments(ARG "" "" "DIRS;SOURCES;LINKS;PRIVATE_LINKS;USES" ${ARGN})
  if(NOT ARG_DIRS)
    message(FATAL_ERROR "strata_add_layer(${target}): DIRS is required")
  endif()
  set_property(GLOBAL APPEND PROPERTY STRATA_LAYER_TARGETS ${target})
  set_property(GLOBAL PROPERTY STRATA_LAYER_DIRS_${target} ${ARG_DIRS})
  set_property(GLOBAL PROPERTY STRATA_LAYER_USES_${target} ${ARG_USES})
  if(kind STREQUAL "INTERFACE")
    add_library(${target} INTERFACE)
    target_link_libraries(${target} INTERFACE ${ARG_LINKS})
    return()
  endif()
  set(sources ${ARG_SOURCES})
  if(NOT sources)
    foreach(dir ${ARG_DIRS})
      file(GLOB_RECURSE found CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cc ${CMAKE_SOURCE_DIR}/${dir}/*.c)
      list(APPEND sources ${found})
    endforeach()
    # Files of a nested layer declared earlier or later are filtered in
    # strata_enforce_layers (by then every layer is known); here, nested folders
    # that hold their own CMakeLists.txt are another layer's.
    set(kept "")
    foreach(file ${sources})
      get_filename_component(file_dir ${file} DIRECTORY)
      set(nested FALSE)
      foreach(dir ${ARG_DIRS})
        set(probe ${file_dir})
        while(NOT probe STREQUAL "${CMAKE_SOURCE_DIR}/${dir}" AND probe MATCHES "^${CMAKE_SOURCE_DIR}/${dir}/")
          if(EXISTS ${probe}/CMakeLists.txt)
            set(nested TRUE)
            break()
          endif()
          get_filename_component(probe ${probe} DIRECTORY)
        endwhile()
      endforeach()
      if(NOT nested)
        list(APPEND kept ${file})
      endif()
    endforeach()
    set(sources ${kept})
  endif()
  add_library(${target} ${kind} ${sources})
  target_link_libraries(${target} PUBLIC ${ARG_LINKS} PRIVATE ${ARG_PRIVATE_LINKS})
endfunction()

# Declares the folders of a target created without strata_add_layer (a library
# whose sources need special handling), so that it is checked like the others.
function(strata_layer_dirs target)
  cmake_parse_arguments(ARG "" "" "DIRS;USES" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY STRATA_LAYER_TARGETS ${target})
  set_property(GLOBAL PROPERTY STRATA_LAYER_DIRS_${target} ${ARG_DIRS})
  set_property(GLOBAL PROPERTY STRATA_LAYER_USES_${target} ${ARG_USES})
endfunction()

# The strata layers `target` links, directly or through others (INTERFACE
# targets and generator expressions such as $<LINK_LIBRARY:WHOLE_ARCHIVE,x> included).
function(_strata_link_closure target out_var)
  set(seen "")
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue current)
    if(NOT TARGET ${current} OR current IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${current})
    get_target_property(type ${current} TYPE)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(direct ${current} LINK_LIBRARIES)
      if(direct)
        list(APPEND links ${direct})
      endif()
    endif()
    get_target_property(iface ${current} INTERFACE_LINK_LIBRARIES)
    if(iface)
      list(APPEND links ${iface})
    endif()
    get_property(uses GLOBAL PROPERTY STRATA_LAYER_USES_${current})
    list(APPEND links ${uses})
    foreach(link ${links})
      # $<LINK_ONLY:x>, $<LINK_LIBRARY:FEATURE,x>: the target is the last item.
      string(REGEX REPLACE "^\\$<[A-Z_]+:(.*)>$" "\\1" link "${link}")
      string(REGEX REPLACE "^.*," "" link "${link}")
      if(TARGET ${link} AND NOT link IN_LIST seen)
        list(APPEND queue ${link})
      endif()
    endforeach()
  endwhile()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

# Call once, after every strata_add_layer.
function(strata_enforce_layers)
  get_property(targets GLOBAL PROPERTY STRATA_LAYER_TARGETS)
  # The map every check reads: one "dir=target" line per owned folder.
  set(map_file ${CMAKE_BINARY_DIR}/layers/layer_map.txt)
  set(map "")
  foreach(target ${targets})
    get_property(dirs GLOBAL PROPERTY STRATA_LAYER_DIRS_${target})
    foreach(dir ${dirs})
      string(APPEND map "${dir}=${target}\n")
    endforeach()
  endforeach()
  file(WRITE ${map_file}.new "${map}")
  file(COPY_FILE ${map_file}.new ${map_file} ONLY_IF_DIFFERENT)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    _strata_link_closure(${target} closure)
    # Only layers own folders; third-party targets in the closure say nothing.
    set(allowed "")
    foreach(link ${closure})
      if(link IN_LIST targets)
        list(APPEND allowed ${link})
      endif()
    endforeach()
    get_property(dirs GLOBAL PROPERTY STRATA_LAYER_DIRS_${target})
    set(files "")
    foreach(dir ${dirs})
      file(GLOB_RECURSE found CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/*.cc ${CMAKE_SOURCE_DIR}/${dir}/*.c
           ${CMAKE_SOURCE_DIR}/${dir}/*.h)
      list(APPEND files ${found})
    endforeach()
    set(stamp ${CMAKE_BINARY_DIR}/layers/${target}.checked)
    # What the target may include, kept for the check and for tests/layers.
    set(allowed_file ${CMAKE_BINARY_DIR}/layers/${target}.allowed)
    string(REPLACE ";" "," allowed_text "${allowed}")
    file(WRITE ${allowed_file}.new "${allowed_text}")
    file(COPY_FILE ${allowed_file}.new ${allowed_file} ONLY_IF_DIFFERENT)
    add_custom_command(
      OUTPUT ${stamp}
      COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_SOURCE_DIR} -DTARGET=${target} -DALLOWED_FILE=${allowed_file}
              -DLAYER_MAP=${map_file} -DSTAMP=${stamp} -P ${CMAKE_SOURCE_DIR}/cmake/check_layer_includes.cmake
      DEPENDS ${files} ${map_file} ${allowed_file} ${CMAKE_SOURCE_DIR}/cmake/check_layer_includes.cmake
      COMMENT "Checking the includes of ${target} against its layers"
      VERBATIM)
    add_custom_target(${target}_layer_check DEPENDS ${stamp})
    add_dependencies(${target} ${target}_layer_check)
  endforeach()
endfunction()
