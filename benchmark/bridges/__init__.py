"""What the meeting-bot bridges cost: `python -m benchmark.bridges` (the figures: docs/benchmarks.md, "Bridges")."""
