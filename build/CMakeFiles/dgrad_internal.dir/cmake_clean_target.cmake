file(REMOVE_RECURSE
  "libdgrad_internal.a"
)
