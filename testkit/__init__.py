"""What the tests and benchmarks run against: a fake OpenAI server, PostgreSQL, server processes, a browser, a live server."""
