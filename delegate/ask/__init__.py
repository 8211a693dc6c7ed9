"""Asking the delegate about the meeting: the embedded asker, the LLM one, and the retrieval they share."""
