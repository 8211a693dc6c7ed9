"""A benchmark run against a model server: its client under the cache and ledger (`run`), and what running calls side
by side and caching them buys (`python -m benchmark.llm.speed`)."""
