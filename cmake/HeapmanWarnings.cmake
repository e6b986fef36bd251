# heapman_warnings(target): the project's warning set; -Werror when HEAPMAN_WERROR (CI).
function(heapman_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wshadow=local)  # GCC's spelling; clang has no =local
  endif()
  if(HEAPMAN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
