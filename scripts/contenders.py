#!/usr/bin/env python3
"""The Python contenders' window: python/attnbench_contenders/ (its docstring says what it runs).

    PYTHONPATH=python .venv/bin/python scripts/contenders.py --preset quick|standard|full \
        --lib build/lib/libattnbench_capi.so --out DIR/python_contenders.json [--filter REGEX]
"""
import sys

from attnbench_contenders.window import main

if __name__ == "__main__":
    sys.exit(main())
