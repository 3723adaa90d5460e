# Empty dependencies file for dgrad_tests.
# This may be replaced when dependencies are built.
