"""`python -m attnbench_report RUN [RUN ...]`: the report's command line (cli.py)."""
import sys

from .cli import main

sys.exit(main())
