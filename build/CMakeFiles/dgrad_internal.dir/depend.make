# Empty dependencies file for dgrad_internal.
# This may be replaced when dependencies are built.
