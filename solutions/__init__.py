"""The reference implementation: the same modules as `exercises/`, with the bodies filled in."""
