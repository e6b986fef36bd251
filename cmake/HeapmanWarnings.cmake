# heapman_warnings(target): the project's warning set; -Werror when HEAPMAN_WERROR (CI).
function(heapman_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow=local -Wno-missing-field-initializers)
  if(HEAPMAN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
