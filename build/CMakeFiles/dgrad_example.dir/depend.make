# Empty dependencies file for dgrad_example.
# This may be replaced when dependencies are built.
