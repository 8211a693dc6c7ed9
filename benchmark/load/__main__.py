from benchmark.load.cli import main
from delegate.extras import run_cli

run_cli(main)
