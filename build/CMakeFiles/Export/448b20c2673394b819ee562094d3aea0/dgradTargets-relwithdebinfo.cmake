#----------------------------------------------------------------
# Generated CMake target import file for configuration "RelWithDebInfo".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "dgrad::dgrad" for configuration "RelWithDebInfo"
set_property(TARGET dgrad::dgrad APPEND PROPERTY IMPORTED_CONFIGURATIONS RELWITHDEBINFO)
set_target_properties(dgrad::dgrad PROPERTIES
  IMPORTED_LINK_DEPENDENT_LIBRARIES_RELWITHDEBINFO "DNNL::dnnl"
  IMPORTED_LOCATION_RELWITHDEBINFO "${_IMPORT_PREFIX}/lib/libdgrad.so.0.1.0"
  IMPORTED_SONAME_RELWITHDEBINFO "libdgrad.so.0"
  )

list(APPEND _cmake_import_check_targets dgrad::dgrad )
list(APPEND _cmake_import_check_files_for_dgrad::dgrad "${_IMPORT_PREFIX}/lib/libdgrad.so.0.1.0" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)
