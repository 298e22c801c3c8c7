"""`attnbench ring` end to end under mpirun: .npy files written by NumPy, the ranks' output
against a NumPy float64 reference, the backward's gradients against `attnbench backward`'s, and a
bad input reported once with exit code 2.

    python tests/ring_cli_test.py build/bin/attnbench
"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

CLI = sys.argv.pop(1) if len(sys.argv) > 1 else "build/bin/attnbench"
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def mpirun(ranks, *args):
    return subprocess.run(["mpirun", "-np", str(ranks), "--oversubscribe", CLI, "ring", *args],
                          capture_output=True, text=True, env=ENV, timeout=300)


def reference(q, k, v, causal):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    group = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


class RingCli(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = lambda name: os.path.join(self.dir.name, name)
        rng = np.random.default_rng(5)
        self.q = rng.standard_normal((4, 45, 24), dtype=np.float32)
        self.k = rng.standard_normal((2, 45, 24), dtype=np.float32)
        self.v = rng.standard_normal((2, 45, 24), dtype=np.float32)
        self.d_o = rng.standard_normal((4, 45, 24), dtype=np.float32)
        for name in ("q", "k", "v", "d_o"):
            np.save(self.path(name + ".npy"), getattr(self, name))

    def tearDown(self):
        self.dir.cleanup()

    def files(self):
        return ["--q", self.path("q.npy"), "--k", self.path("k.npy"), "--v", self.path("v.npy")]

    def test_forward_matches_reference(self):
        for ranks in (1, 2, 3):
            for causal in (False, True):
                out = self.path(f"o{ranks}{causal}.npy")
                r = mpirun(ranks, *self.files(), "--out", out, *(["--causal"] if causal else []))
                self.assertEqual(r.returncode, 0, r.stderr)
                o = np.load(out)
                self.assertEqual(o.shape, self.q.shape)
                err = np.abs(o - reference(self.q, self.k, self.v, causal)).max()
                self.assertLess(err, 1e-5, f"{ranks} ranks, causal {causal}")

    def test_backward_matches_single_process(self):
        grads = [self.path(g) for g in ("dq.npy", "dk.npy", "dv.npy")]
        single = [self.path(g) for g in ("dq1.npy", "dk1.npy", "dv1.npy")]
        r = mpirun(3, *self.files(), "--out", self.path("o.npy"), "--causal",
                   "--do", self.path("d_o.npy"), "--dq", grads[0], "--dk", grads[1],
                   "--dv", grads[2])
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([CLI, "backward", *self.files(), "--causal", "--do",
                            self.path("d_o.npy"), "--dq", single[0], "--dk", single[1],
                            "--dv", single[2]], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        for ring_grad, one in zip(grads, single):
            a, b = np.load(ring_grad), np.load(one)
            self.assertLess(np.abs(a - b).max(), 1e-4 * (1 + np.abs(b).max()), ring_grad)

    def test_bad_input_reported_once(self):
        np.save(self.path("short.npy"), self.k[:, :40])
        r = mpirun(2, "--q", self.path("q.npy"), "--k", self.path("short.npy"), "--v",
                   self.path("v.npy"), "--out", self.path("o.npy"))
        self.assertEqual(r.returncode, 2)
        lines = [l for l in r.stderr.splitlines() if l.startswith("attnbench:")]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("rank 0", lines[0])
        self.assertFalse(os.path.exists(self.path("o.npy")))


if __name__ == "__main__":
    unittest.main()
