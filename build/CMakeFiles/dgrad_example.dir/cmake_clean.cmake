file(REMOVE_RECURSE
  "CMakeFiles/dgrad_example.dir/examples/example.c.o"
  "CMakeFiles/dgrad_example.dir/examples/example.c.o.d"
  "dgrad_example"
  "dgrad_example.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/dgrad_example.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
