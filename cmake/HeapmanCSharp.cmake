# C# assemblies built with Mono's compiler (mono-mcs): the samples, the Mono recorder tests'
# programs and the Mono benchmark.
#
#   heapman_csharp_assembly(TARGET NAME.exe SOURCES a.cs b.cs... [FLAGS -unsafe ...] [ALL])
#
# Adds a custom target TARGET that builds NAME.exe in the current binary directory from the
# sources (relative to the current source directory, or absolute), and sets the target's
# HEAPMAN_ASSEMBLY property to the assembly's path. Does nothing where mcs is missing
# (HEAPMAN_MCS unset); callers test `if(TARGET ...)`.
find_program(HEAPMAN_MCS mcs)

function(heapman_csharp_assembly target assembly)
  cmake_parse_arguments(CS "ALL" "" "SOURCES;FLAGS" ${ARGN})
  if(NOT HEAPMAN_MCS)
    return()
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${assembly})
  set(sources)
  foreach(src IN LISTS CS_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    list(APPEND sources ${abs})
  endforeach()
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${HEAPMAN_MCS} -nologo ${CS_FLAGS} -out:${out} ${sources}
    DEPENDS ${sources}
    COMMENT "mcs ${assembly}")
  if(CS_ALL)
    add_custom_target(${target} ALL DEPENDS ${out})
  else()
    add_custom_target(${target} DEPENDS ${out})
  endif()
  set_target_properties(${target} PROPERTIES HEAPMAN_ASSEMBLY ${out})
endfunction()
