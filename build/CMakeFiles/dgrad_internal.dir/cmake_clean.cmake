file(REMOVE_RECURSE
  "libdgrad_internal.a"
  "libdgrad_internal.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/dgrad_internal.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
