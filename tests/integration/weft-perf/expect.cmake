# cmake -DEXPECT_EXIT=<code> -DEXPECT_OUTPUT=<regex> [-DEXPECT_FILE=<path>] -P expect.cmake --
#       <program> [args...]
# Runs the program and fails unless it exits with EXPECT_EXIT and its stdout+stderr match
# EXPECT_OUTPUT (and EXPECT_FILE, when given, exists afterwards). ctest's PASS_REGULAR_EXPRESSION
# alone would ignore the exit status; this checks both.
set(command)
set(collect FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(collect)
    if(command OR NOT CMAKE_ARGV${i} STREQUAL "--")  # "--" keeps cmake off the program's flags
      list(APPEND command "${CMAKE_ARGV${i}}")
    endif()
  elseif(CMAKE_ARGV${i} MATCHES "expect\\.cmake$")
    set(collect TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "expect.cmake: no program to run")
endif()
if(EXPECT_FILE)
  file(REMOVE "${EXPECT_FILE}")
endif()
execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT "${status}" STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "exit status ${status}, expected ${EXPECT_EXIT}")
endif()
if(NOT out MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "the output does not match '${EXPECT_OUTPUT}'")
endif()
if(EXPECT_FILE AND NOT EXISTS "${EXPECT_FILE}")
  message(FATAL_ERROR "${EXPECT_FILE} was not written")
endif()
