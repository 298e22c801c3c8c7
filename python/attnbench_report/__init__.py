"""attnbench's report generator: figures and text from the benchmark's Google Benchmark JSON.

    python -m attnbench_report RUN_DIR_OR_JSON [RUN2 ...] [--out DIR]   (cli.py)

Sub-packages by job: load/ reads the JSON windows (results.py is the one loader of benchmark
names), analysis/ derives the numbers that the figures and the text share, figures/ draws one
figure per module, narrative/ phrases the sections; document.py and render.py hold the document
and write it as Markdown and HTML (templates/)."""
