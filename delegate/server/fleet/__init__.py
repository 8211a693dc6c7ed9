"""Several server processes on one machine: the supervisor of `delegate serve --workers N` and its proxy."""
