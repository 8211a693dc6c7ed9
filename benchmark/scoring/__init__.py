"""Scoring the delegate: benchmark data, variants, the runner, judges, figures and reports."""
