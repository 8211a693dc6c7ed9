"""The reply plan's labelled turns (turns.jsonl, card in README.md) and its benchmark, `python -m benchmark.plan`."""
