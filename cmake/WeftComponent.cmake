# weft_component(<name> SOURCES <files...> [DEPENDS <components...>])
#   One layer or folder of the library as an OBJECT library `weft_<name>`. libweft.so and
#   weft_static are made of every component's objects. DEPENDS names the components whose
#   headers it uses (usage only: objects are collected at the top).
function(weft_component name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_library(weft_${name} OBJECT ${ARG_SOURCES})
  # The library is compiled file by file even in unity builds (CMakeLists.txt): batched, its
  # loopback sweeps and schedule replays ran 6-7% slower (other inlining across a batch). The
  # sanitizer builds, where compiling is most of the time, batch it too: scripts/sanitizers.sh's
  # ASan+UBSan build took 230 s instead of 272 s on 2 cores.
  if(NOT WEFT_SANITIZE)
    set_target_properties(weft_${name} PROPERTIES UNITY_BUILD OFF)
  endif()
  target_link_libraries(weft_${name} PUBLIC weft_deps ${ARG_DEPENDS} PRIVATE weft_warnings)
  set_property(GLOBAL APPEND PROPERTY WEFT_COMPONENTS weft_${name})
endfunction()

# weft_unit_test(<name> SOURCES <files...> [LINK <targets...>] [ENVIRONMENT <VAR=value>])
#   A Catch2 program `weft-test-<name>`; ctest lists each TEST_CASE. LINK defaults to
#   weft_static (the whole library); a test may instead name the components it needs.
function(weft_unit_test name)
  cmake_parse_arguments(ARG "" "ENVIRONMENT" "SOURCES;LINK" ${ARGN})
  # catch_discover_tests passes property values through a generated script that splits them at
  # semicolons, so a second VAR=value would be lost without a word: one variable only.
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "weft_unit_test(${name}): unexpected ${ARG_UNPARSED_ARGUMENTS} (ENVIRONMENT "
                        "takes one VAR=value)")
  endif()
  if(NOT ARG_LINK)
    set(ARG_LINK weft_static)
  endif()
  add_executable(weft-test-${name} ${ARG_SOURCES})
  target_link_libraries(weft-test-${name} PRIVATE ${ARG_LINK} weft_deps Catch2::Catch2WithMain
                                                  weft_warnings)
  target_include_directories(weft-test-${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  set(properties TIMEOUT 600)
  if(ARG_ENVIRONMENT)
    list(APPEND properties ENVIRONMENT "${ARG_ENVIRONMENT}")
  endif()
  # --warn NoTests: a test whose name Catch cannot find again fails instead of running nothing
  # (catch_discover_tests splits names at semicolons: TEST_CASE names must not hold one).
  catch_discover_tests(weft-test-${name} TEST_PREFIX "${name}: " EXTRA_ARGS --warn NoTests
                       PROPERTIES ${properties})
endfunction()
