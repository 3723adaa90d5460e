file(REMOVE_RECURSE
  "CMakeFiles/dgrad_objects.dir/src/api.c.o"
  "CMakeFiles/dgrad_objects.dir/src/api.c.o.d"
  "CMakeFiles/dgrad_objects.dir/src/error.c.o"
  "CMakeFiles/dgrad_objects.dir/src/error.c.o.d"
  "CMakeFiles/dgrad_objects.dir/src/onednn.c.o"
  "CMakeFiles/dgrad_objects.dir/src/onednn.c.o.d"
  "CMakeFiles/dgrad_objects.dir/src/problem.c.o"
  "CMakeFiles/dgrad_objects.dir/src/problem.c.o.d"
  "CMakeFiles/dgrad_objects.dir/src/reference.c.o"
  "CMakeFiles/dgrad_objects.dir/src/reference.c.o.d"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/dgrad_objects.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
