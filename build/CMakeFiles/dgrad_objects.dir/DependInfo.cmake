
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/api.c" "CMakeFiles/dgrad_objects.dir/src/api.c.o" "gcc" "CMakeFiles/dgrad_objects.dir/src/api.c.o.d"
  "/work/main/src/error.c" "CMakeFiles/dgrad_objects.dir/src/error.c.o" "gcc" "CMakeFiles/dgrad_objects.dir/src/error.c.o.d"
  "/work/main/src/onednn.c" "CMakeFiles/dgrad_objects.dir/src/onednn.c.o" "gcc" "CMakeFiles/dgrad_objects.dir/src/onednn.c.o.d"
  "/work/main/src/problem.c" "CMakeFiles/dgrad_objects.dir/src/problem.c.o" "gcc" "CMakeFiles/dgrad_objects.dir/src/problem.c.o.d"
  "/work/main/src/reference.c" "CMakeFiles/dgrad_objects.dir/src/reference.c.o" "gcc" "CMakeFiles/dgrad_objects.dir/src/reference.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
