file(REMOVE_RECURSE
  "CMakeFiles/dgrad_tests.dir/test_adjoint.c.o"
  "CMakeFiles/dgrad_tests.dir/test_adjoint.c.o.d"
  "CMakeFiles/dgrad_tests.dir/test_api.c.o"
  "CMakeFiles/dgrad_tests.dir/test_api.c.o.d"
  "CMakeFiles/dgrad_tests.dir/test_matrix.c.o"
  "CMakeFiles/dgrad_tests.dir/test_matrix.c.o.d"
  "CMakeFiles/dgrad_tests.dir/test_onednn.c.o"
  "CMakeFiles/dgrad_tests.dir/test_onednn.c.o.d"
  "CMakeFiles/dgrad_tests.dir/test_problem.c.o"
  "CMakeFiles/dgrad_tests.dir/test_problem.c.o.d"
  "CMakeFiles/dgrad_tests.dir/test_vectors.c.o"
  "CMakeFiles/dgrad_tests.dir/test_vectors.c.o.d"
  "CMakeFiles/dgrad_tests.dir/tester.c.o"
  "CMakeFiles/dgrad_tests.dir/tester.c.o.d"
  "dgrad_tests"
  "dgrad_tests.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/dgrad_tests.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
