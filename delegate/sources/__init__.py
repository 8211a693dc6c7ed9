"""The principal's workplace sources (Slack, mail, calendar, contacts, issues, documents) and the brief built from them."""
