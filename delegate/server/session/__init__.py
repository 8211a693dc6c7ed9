"""One live meeting, composed of its parts: outbox, decisions, approval desk, actions, audio in, voice out."""
