"""The one OpenAI-compatible client of the process and prompt rendering."""
