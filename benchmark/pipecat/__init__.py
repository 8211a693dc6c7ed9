"""`python -m benchmark.pipecat`: a benchmark meeting replayed through a real pipecat pipeline holding the
delegate's frame processor, against the engine run directly on the same meeting."""
