"""Contenders that fail the way native libraries do, for the window's isolation test: one aborts its
process (as a segfault in a library would end it), one never returns."""
import os
import time

import attnbench_contenders as contenders


class Aborts(contenders.NumpyInplace):
    """Correct on two threads; on one thread its call ends the process."""

    name = "faulty/aborts"

    def run(self):
        if self.point["threads"] == 1:
            os.abort()
        super().run()


class Hangs(contenders.NumpyInplace):
    name = "faulty/hangs"

    def run(self):
        time.sleep(3600)


def aborting(capi, blas):
    return {"forward": [contenders.Attnbench(capi, "tiled/simd"), Aborts(blas)]}


def hanging(capi, blas):
    return {"forward": [contenders.Attnbench(capi, "tiled/simd"), Hangs(blas)]}
