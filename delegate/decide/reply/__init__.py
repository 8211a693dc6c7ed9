"""What the principal says once the floor is theirs: the reply plan (what the turn asks), the answer selector (which
item answers it), composing one item's sentences, settling a question, phrasing records, speaking as the principal."""
