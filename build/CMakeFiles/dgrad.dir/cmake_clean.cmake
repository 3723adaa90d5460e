file(REMOVE_RECURSE
  "libdgrad.pdb"
  "libdgrad.so"
  "libdgrad.so.0"
  "libdgrad.so.0.1.0"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/dgrad.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
