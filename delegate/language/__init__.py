"""Words and meaning, no meeting state: text, names, similarity, questions."""
