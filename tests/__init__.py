"""The tests mirror the packages (a regular package, so that no installed top-level `tests` shadows it)."""
