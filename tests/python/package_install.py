"""`pip install .` into a fresh virtual environment, then the package used from outside the source
tree: ctest's python_package_test (tests/CMakeLists.txt).

    .venv/bin/python tests/python/package_install.py --source . --work /tmp/package_test

The fresh environment has no packages of its own and no pip: a .pth file puts the project
environment's site-packages (ATTNBENCH_PYTHON's: NumPy, jinja2, matplotlib, scikit-build-core,
pybind11, pip) after its own, so the install runs offline (--no-index, --no-build-isolation) and
downloads nothing, while attnbench lands in the fresh environment. The build compiles the library
once more (Release, only the extension's targets, CMAKE_BUILD_PARALLEL_LEVEL=2 unless set).
Not named test_*: python_test's discovery does not run it.
"""
import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

CHECK = """
import sys, numpy as np, attnbench
assert attnbench.__file__.startswith(sys.prefix), (attnbench.__file__, sys.prefix)
q = np.random.default_rng(0).standard_normal((2, 5, 8), dtype=np.float32)
o = attnbench.attention(q, q, q, causal=True)
cache = attnbench.KvCache(2, 8, 16, kv_dtype="bf16")
cache.append(q, q)
assert np.array_equal(attnbench.attention(q, cache=cache), attnbench.attention(q, q, q, kv_dtype="bf16"))
print("attnbench", attnbench.__version__, "from", attnbench.__file__, "output", o.shape)
"""


def run(command, **kwargs):
    print("+", " ".join(str(c) for c in command), flush=True)
    start = time.perf_counter()
    subprocess.run(command, check=True, **kwargs)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="the project's source tree")
    parser.add_argument("--work", type=Path, required=True, help="a scratch directory, emptied first")
    args = parser.parse_args()
    source, work = args.source.resolve(), args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    venv = work / "venv"

    took = {"venv": run([sys.executable, "-m", "venv", "--without-pip", venv])}
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "project_venv.pth").write_text(sysconfig.get_path("purelib") + "\n")

    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    env.pop("PYTHONPATH", None)  # no build tree's attnbench
    took["pip install"] = run([python, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                               "--disable-pip-version-check", "--quiet", str(source)], env=env,
                              cwd=work)
    # From a directory outside the source tree, so nothing imports from python/.
    took["import and call"] = run([python, "-c", CHECK], env=env, cwd=work)
    took["attnbench-report --help"] = run([venv / "bin" / "attnbench-report", "--help"], env=env,
                                          cwd=work, stdout=subprocess.DEVNULL)
    for step, seconds in took.items():
        print(f"{step}: {seconds:.1f} s")


if __name__ == "__main__":
    main()
