"""Names in speech: the first-name list, the garble table (`python -m benchmark.garbles`), and
`python -m benchmark.names`, which measures names heard on the live recogniser's path."""
