"""`python -m delegate.train …`, the documented command, runs `python -m training …` (the training code
lives apart from the product, which never imports it)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("training", run_name="__main__", alter_sys=True)
