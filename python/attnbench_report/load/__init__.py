"""Readers of the JSON the study writes: results.py (the benchmark matrix and the windows named in
its folder, the one parser of benchmark names), decode.py, machine_constants.py and demos.py."""
