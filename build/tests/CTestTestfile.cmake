# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test([=[dgrad_tests]=] "/work/main/build/tests/dgrad_tests" "--jobs" "2")
set_tests_properties([=[dgrad_tests]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;13;add_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[readme_example]=] "/work/main/scripts/check-readme-example.sh" "/work/main/build")
set_tests_properties([=[readme_example]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;16;add_test;/work/main/tests/CMakeLists.txt;0;")
