"""The HTML report opens in headless Chromium without errors, and a screenshot is taken.

Skipped, with a message, only when Chromium is not installed (scripts/setup.sh installs it)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest

import support

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


def run_chromium(url: str, *extra: str) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="attnbench-chromium-")
    try:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url], capture_output=True,
                              text=True, timeout=180, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def page_errors(stderr: str) -> list:
    """Console output and uncaught exceptions of the page (the report's page writes none)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


@unittest.skipIf(CHROMIUM is None, "chromium is not installed (Debian package `chromium`; scripts/setup.sh "
                                   "installs it): the HTML report was not opened in a browser")
class HeadlessChromium(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.run_dir = support.fixture_report()
        cls.url = (cls.run_dir / "report.html").resolve().as_uri()

    def test_page_renders_title_figures_and_script_without_errors(self):
        result = run_chromium(self.url, "--dump-dom")
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertEqual(page_errors(result.stderr), [])
        dom = result.stdout
        self.assertRegex(dom, r"<title>attnbench report: [^<]+</title>")
        # the page's script ran to its end and counted the inline SVG figures it found
        self.assertIn(f'data-figures="{len(support.FIGURE_STEMS)}"', dom)
        for stem in support.FIGURE_STEMS:
            self.assertIn(f'id="{stem}"', dom)

    def test_screenshot(self):
        shot = support.output_root() / "report_screenshot.png"
        if shot.exists():
            shot.unlink()
        result = run_chromium(self.url, f"--screenshot={shot}", "--window-size=1280,4000", "--hide-scrollbars")
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertEqual(page_errors(result.stderr), [])
        self.assertTrue(shot.is_file(), "no screenshot written")
        import matplotlib.image

        pixels = matplotlib.image.imread(str(shot))
        self.assertEqual(pixels.shape[:2], (4000, 1280))
        # not a blank page: text and figures make many distinct shades
        self.assertGreater(len({tuple(p) for p in pixels[::7, ::7, :3].reshape(-1, 3).round(2)}), 50)
        if os.environ.get("ATTNBENCH_REPORT_TEST_OUT"):
            print(f"\nscreenshot: {shot}")


if __name__ == "__main__":
    unittest.main()
