# Empty dependencies file for dgrad_objects.
# This may be replaced when dependencies are built.
