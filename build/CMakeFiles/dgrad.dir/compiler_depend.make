# Empty compiler generated dependencies file for dgrad.
# This may be replaced when dependencies are built.
