# Checks the `#include "..."` lines of one layer's files (cmake -P; see StrataLayers.cmake).
#   ROOT       the source root the include paths and the map's folders are relative to
#   TARGET     the layer to check
#   ALLOWED_FILE  a file holding the comma-separated layers TARGET links
#                 (directly or not; written by strata_enforce_layers)
#   LAYER_MAP  file of "folder=target" lines
#   STAMP      written when every include is allowed
# Exits with an error naming every forbidden include (file:line, the include, the
# layer it belongs to and what TARGET links) so the build stops there.
cmake_minimum_required(VERSION 3.20)
foreach(var ROOT TARGET LAYER_MAP ALLOWED_FILE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_layer_includes: -D${var}=... is required")
  endif()
endforeach()
file(READ ${ALLOWED_FILE} allowed)
string(STRIP "${allowed}" allowed)
string(REPLACE "," ";" allowed "${allowed}")
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
list(APPEND allowed ${TARGET})

file(STRINGS ${LAYER_MAP} map_lines)
set(layer_dirs "")
foreach(line ${map_lines})
  string(REGEX MATCH "^([^=]+)=(.+)$" _ "${line}")
  list(APPEND layer_dirs ${CMAKE_MATCH_1})
  set(owner_of_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()

# The layer owning `path` (relative to ROOT): the longest declared folder prefix.
function(owner_of path out_var)
  set(best "")
  set(best_length 0)
  foreach(dir ${layer_dirs})
    string(LENGTH "${dir}" length)
    if(length GREATER best_length)
      string(FIND "${path}" "${dir}/" at)
      if(at EQUAL 0)
        set(best ${owner_of_${dir}})
        set(best_length ${length})
      endif()
    endif()
  endforeach()
  set(${out_var} "${best}" PARENT_SCOPE)
endfunction()

set(own_dirs "")
foreach(dir ${layer_dirs})
  if(owner_of_${dir} STREQUAL TARGET)
    list(APPEND own_dirs ${dir})
  endif()
endforeach()
if(NOT own_dirs)
  message(FATAL_ERROR "check_layer_includes: ${TARGET} owns no folder in ${LAYER_MAP}")
endif()

set(errors "")
foreach(dir ${own_dirs})
  file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/${dir}/*.h ${ROOT}/${dir}/*.cc ${ROOT}/${dir}/*.c)
  list(SORT files)
  foreach(file ${files})
    owner_of(${file} file_owner)
    if(NOT file_owner STREQUAL TARGET)
      continue()  # a nested layer's file
    endif()
    file(STRINGS ${ROOT}/${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "\"([^\"]+)\"" _ "${line}")
      set(header ${CMAKE_MATCH_1})
      owner_of(${header} header_owner)
      if(header_owner STREQUAL "" OR header_owner IN_LIST allowed)
        continue()
      endif()
      # Only a violation pays for finding its line number.
      file(READ ${ROOT}/${file} text)
      string(FIND "${text}" "${line}" at)
      string(SUBSTRING "${text}" 0 ${at} before)
      string(REGEX MATCHALL "\n" newlines "${before}")
      list(LENGTH newlines number)
      math(EXPR number "${number} + 1")
      set(links ${allowed})
      list(REMOVE_ITEM links ${TARGET})
      string(REPLACE ";" ", " links "${links}")
      string(APPEND errors
             "${file}:${number}: #include \"${header}\": ${TARGET} may not use ${header_owner} "
             "(it links only: ${links}); include a lower layer, move the code, or add the link edge "
             "in ${TARGET}'s CMakeLists.txt if the layers allow it (docs/architecture.md)\n")
    endforeach()
  endforeach()
endforeach()
if(errors)
  # NOTICE prints the lines as they are (errors are word-wrapped), one per include.
  message(NOTICE "${errors}")
  message(FATAL_ERROR "layer violation in ${TARGET} (the includes above)")
endif()
if(DEFINED STAMP)
  file(TOUCH ${STAMP})
endif()
