include_guard(GLOBAL)
# claimcheck_add_claim_tests(EXPECTED_DIR dir)
#   One ctest per expected/chNN/<name>.json, named by its id (chNN.<name>), running
#   `claimcheck run --claim <id>`; labels: the chapter, each kind, each requirement,
#   and "pending" for claims whose check has not arrived yet. Skip = exit 77.
#   Names and labels are derived here, once, from the expected files.
cmake_host_system_information(RESULT CLAIMCHECK_TEST_CORES QUERY NUMBER_OF_LOGICAL_CORES)

# The list under the JSON path (keys...) of `text`, empty when absent.
function(claimcheck_json_list text out)
  string(JSON n ERROR_VARIABLE err LENGTH "${text}" ${ARGN})
  set(items "")
  if(NOT err AND n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON v GET "${text}" ${ARGN} ${i})
      list(APPEND items "${v}")
    endforeach()
  endif()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

function(claimcheck_add_claim_tests)
  cmake_parse_arguments(ARG "" "EXPECTED_DIR" "" ${ARGN})
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${ARG_EXPECTED_DIR}/ch*/*.json")
  list(SORT files)
  foreach(f IN LISTS files)
    file(READ "${f}" text)
    string(JSON id ERROR_VARIABLE err GET "${text}" id)
    if(err)
      message(FATAL_ERROR "${f}: field 'id': ${err}")
    endif()
    get_filename_component(name "${f}" NAME_WE)
    get_filename_component(dir "${f}" DIRECTORY)
    get_filename_component(chapter "${dir}" NAME)
    if(NOT id STREQUAL "${chapter}.${name}")
      message(FATAL_ERROR "${f}: field 'id' is '${id}', but the file's place says '${chapter}.${name}'")
    endif()
    set(labels "${chapter}")
    foreach(key kind requires)
      string(JSON type ERROR_VARIABLE err TYPE "${text}" ${key})
      if(err OR NOT type STREQUAL "ARRAY")
        message(FATAL_ERROR "${f}: field '${key}': expected a list")
      endif()
      claimcheck_json_list("${text}" values ${key})
      list(APPEND labels ${values})
    endforeach()
    string(JSON pending ERROR_VARIABLE err GET "${text}" pending)
    if(NOT err AND pending)
      list(APPEND labels pending)
    endif()
    add_test(NAME ${id} COMMAND claimcheck run --claim ${id} --quiet)
    set_tests_properties(${id} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77 TIMEOUT 900)
    # Timings and memory peaks are measured alone: nothing else runs beside them.
    if("measured" IN_LIST labels)
      set_tests_properties(${id} PROPERTIES RUN_SERIAL TRUE)
    endif()
    # LibTorch's OpenMP pool and the Python process pools take every core: under `ctest -jN` such a test claims
    # them all, so that two of them never spin against each other (two 2-thread LibTorch runs on 2 cores took
    # 3.6x as long as one alone).
    if("libtorch" IN_LIST labels OR "python" IN_LIST labels)
      set_tests_properties(${id} PROPERTIES PROCESSORS ${CLAIMCHECK_TEST_CORES})
    endif()
  endforeach()
endfunction()

# claimcheck_add_py_test(NAME name SCRIPT file [LABELS ...] [ARGS ...])
#   A Python test run with the interpreter found at configure time; skip = exit 77.
function(claimcheck_add_py_test)
  cmake_parse_arguments(ARG "" "NAME;SCRIPT" "LABELS;ARGS" ${ARGN})
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(NOT Python3_Interpreter_FOUND)
    message(STATUS "claimcheck: no python3: ${ARG_NAME} not added")
    return()
  endif()
  add_test(NAME ${ARG_NAME} COMMAND ${Python3_EXECUTABLE} ${ARG_SCRIPT} ${ARG_ARGS})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" SKIP_RETURN_CODE 77)
endfunction()

# claimcheck_add_claims_md(EXPECTED_DIR dir)
#   Target claims_md (part of the default build): docs/claims.md from expected/chapters.json and the expected files
#   (docs/claims_md.py), rewritten only when they change; and test_claims_md, which fails when the checked-in
#   catalogue is not what they say.
function(claimcheck_add_claims_md)
  cmake_parse_arguments(ARG "" "EXPECTED_DIR" "" ${ARGN})
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(NOT Python3_Interpreter_FOUND)
    message(STATUS "claimcheck: no python3: docs/claims.md is not regenerated")
    return()
  endif()
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${ARG_EXPECTED_DIR}/ch*/*.json")
  set(script "${PROJECT_SOURCE_DIR}/docs/claims_md.py")
  set(stamp "${PROJECT_BINARY_DIR}/claims_md.stamp")
  # The list of expected files, rewritten only when it changes: a claim removed reruns the catalogue too.
  string(REPLACE ";" "\n" listing "${files}")
  file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/claims_md.files" CONTENT "${listing}\n" @ONLY)
  add_custom_command(OUTPUT "${stamp}"
                     COMMAND ${Python3_EXECUTABLE} "${script}" --root "${PROJECT_SOURCE_DIR}" --write
                     COMMAND ${CMAKE_COMMAND} -E touch "${stamp}"
                     DEPENDS ${files} "${PROJECT_BINARY_DIR}/claims_md.files" "${ARG_EXPECTED_DIR}/chapters.json"
                             "${script}"
                     COMMENT "docs/claims.md from the expected files" VERBATIM)
  add_custom_target(claims_md ALL DEPENDS "${stamp}")
  add_test(NAME test_claims_md COMMAND ${Python3_EXECUTABLE} "${script}" --root "${PROJECT_SOURCE_DIR}" --check)
  set_tests_properties(test_claims_md PROPERTIES LABELS "unit")
endfunction()

# claimcheck_link_everywhere(<interface target> <dir>)
#   Links the interface target (PRIVATE) into every compiled target defined in <dir> and the folders below it.
#   Targets whose sources lie outside the project (googletest built from /usr/src) are left alone.
function(claimcheck_link_everywhere lib dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    get_target_property(src ${t} SOURCE_DIR)
    string(FIND "${src}/" "${PROJECT_SOURCE_DIR}/" at)
    if(NOT at EQUAL 0)
      continue()
    endif()
    if(type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      target_link_libraries(${t} PRIVATE ${lib})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    claimcheck_link_everywhere(${lib} "${d}")
  endforeach()
endfunction()
