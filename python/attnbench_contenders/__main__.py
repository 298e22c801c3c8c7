"""python -m attnbench_contenders: the Python contenders' window."""
import sys

from .window import main

sys.exit(main())
