"""The workplace benchmark: brief the delegate from a `workplace-scenario/1` folder's sources, then replay its meeting."""
