# strata-server's gRPC endpoint: the KServe v2 / Triton inference.GRPCInferenceService
# (apps/server/proto) on Debian's gRPC C++ and protobuf. Included from
# apps/server/CMakeLists.txt; strata-server links strata_server_grpc.
#
# The generated code goes to <build>/generated/apps/server/proto, which
# strata_support's include path already holds: sources include
# "apps/server/proto/grpc_service.grpc.pb.h", and the generated files include
# each other the same way (protoc runs with the source root on its path). Like
# the rest of the server, none of it touches LLVM or the compiler.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)

set(_strata_proto_out ${CMAKE_BINARY_DIR}/generated/apps/server/proto)
file(MAKE_DIRECTORY ${_strata_proto_out})
set(_strata_grpc_generated "")
foreach(_name model_config grpc_service)
  set(_proto ${CMAKE_SOURCE_DIR}/apps/server/proto/${_name}.proto)
  set(_outputs ${_strata_proto_out}/${_name}.pb.cc ${_strata_proto_out}/${_name}.pb.h)
  set(_grpc_args "")
  if(_name STREQUAL "grpc_service")  # the only one with a service
    list(APPEND _outputs ${_strata_proto_out}/${_name}.grpc.pb.cc ${_strata_proto_out}/${_name}.grpc.pb.h)
    set(_grpc_args --grpc_out=${CMAKE_BINARY_DIR}/generated
                   --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>)
  endif()
  add_custom_command(
    OUTPUT ${_outputs}
    COMMAND protobuf::protoc -I ${CMAKE_SOURCE_DIR} --cpp_out=${CMAKE_BINARY_DIR}/generated ${_grpc_args} ${_proto}
    DEPENDS ${_proto} protobuf::protoc gRPC::grpc_cpp_plugin
    COMMENT "Generating the C++ of apps/server/proto/${_name}.proto"
    VERBATIM)
  list(APPEND _strata_grpc_generated ${_outputs})
endforeach()

# The generated code, compiled without the project's warnings (it is not ours to fix).
add_library(strata_server_grpc_proto STATIC ${_strata_grpc_generated})
target_compile_options(strata_server_grpc_proto PRIVATE -w)
target_link_libraries(strata_server_grpc_proto PUBLIC strata_support gRPC::grpc++ protobuf::libprotobuf)

# grpc_*.cc sit in apps/server, so strata_server's layer check reads their
# includes: the server's own headers and the runtime's, nothing of the compiler.
add_library(strata_server_grpc STATIC ${CMAKE_CURRENT_SOURCE_DIR}/grpc_server.cc
                                      ${CMAKE_CURRENT_SOURCE_DIR}/grpc_codec.cc)
target_link_libraries(strata_server_grpc PUBLIC strata_server strata_server_grpc_proto PRIVATE absl::synchronization)
