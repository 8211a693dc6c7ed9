"""The benchmark: replay meeting snapshots through the delegate and score what it does."""
