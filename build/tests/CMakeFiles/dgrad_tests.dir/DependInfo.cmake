
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/tests/test_adjoint.c" "tests/CMakeFiles/dgrad_tests.dir/test_adjoint.c.o" "gcc" "tests/CMakeFiles/dgrad_tests.dir/test_adjoint.c.o.d"
  "/work/main/tests/test_api.c" "tests/CMakeFiles/dgrad_tests.dir/test_api.c.o" "gcc" "tests/CMakeFiles/dgrad_tests.dir/test_api.c.o.d"
  "/work/main/tests/test_matrix.c" "tests/CMakeFiles/dgrad_tests.dir/test_matrix.c.o" "gcc" "tests/CMakeFiles/dgrad_tests.dir/test_matrix.c.o.d"
  "/work/main/tests/test_onednn.c" "tests/CMakeFiles/dgrad_tests.dir/test_onednn.c.o" "gcc" "tests/CMakeFiles/dgrad_tests.dir/test_onednn.c.o.d"
  "/work/main/tests/test_problem.c" "tests/CMakeFiles/dgrad_tests.dir/test_problem.c.o" "gcc" "tests/CMakeFiles/dgrad_tests.dir/test_problem.c.o.d"
  "/work/main/tests/test_vectors.c" "tests/CMakeFiles/dgrad_tests.dir/test_vectors.c.o" "gcc" "tests/CMakeFiles/dgrad_tests.dir/test_vectors.c.o.d"
  "/work/main/tests/tester.c" "tests/CMakeFiles/dgrad_tests.dir/tester.c.o" "gcc" "tests/CMakeFiles/dgrad_tests.dir/tester.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/CMakeFiles/dgrad_internal.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
