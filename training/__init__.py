"""Training-only code (needs the `[train]` extra): data sets and fitting of the models the package ships."""
