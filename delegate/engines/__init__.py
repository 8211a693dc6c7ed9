"""Decision engines: the embedded default (`local`) and the LLM-backed ones."""
