#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora: fuzz/corpus/attention/ and fuzz/corpus/npy/.

    .venv/bin/python fuzz/make_seeds.py

The seeds are committed; this script says how each was made. Attention seeds follow the input
layout documented in fuzz/attention_case.hpp; .npy seeds are numpy's own files (valid) and
hand-broken ones (every way the reader must refuse).
"""
import io
import pathlib
import struct

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent

# ---------------------------------------------------------------------------------------------
# Attention cases

SPECIALS = ["nan", "+inf", "-inf", "max", "-max", "huge", "-huge", "denorm_min", "-denormal",
            "zero", "-zero", "raw", "row_raw", "outlier"]
TENSORS = {"q": 0, "k": 1, "v": 2}
SCALES = {"default": 15, "0": 0, "1": 2, "-1": 3, "0.125": 4, "1e-3": 5, "30": 6, "-7.5": 7,
          "1e20": 8, "1e-30": 9, "denormal": 10, "raw": 11}
MAGNITUDES = {1: 0, 0.25: 4, 4: 5, 30: 6, 1e-3: 7, 1e3: 8, 1e-12: 9, 1e12: 10, 1e-39: 11,
              1e30: 12, 1e38: 13, 0: 14, 100: 15}


def attention_case(q=17, k=65, d=31, causal=False, batch=1, kv_heads=1, group=1, threads=1,
                   decoding=False, scale="default", raw_scale=None, mags=(1, 1, 1), budget=None,
                   mask=None, seed=1, patches=()):
    """mask: None, or (kind, top_left, w[, cap[, alibi[, tensor]]]) as attention_case.hpp's byte 8 =
    0x5A reads it: kind 0 a left window (causal as given), 1 local, 2 right only, 3 the alignment alone;
    cap 0-3 a soft-cap of none, 2, 30 or 50; tensor 0-3 a mask tensor of none, keep, bias or band."""
    flags = (causal * 1) | ((batch == 2) << 1) | ((kv_heads == 2) << 2) | ((group - 1) << 3)
    flags |= {1: 0, 2: 2, 3: 3}[threads] << 5
    flags |= decoding << 7
    if decoding:
        assert 1 <= q <= 4 and 4000 <= k <= 4000 + 9 * 255 and (k - 4000) % 9 == 0 and d <= 8
        lengths = [q - 1, (k - 4000) // 9, d - 1]
    else:
        assert max(q, k, d) <= 70
        lengths = [q - 1, k - 1, d - 1]
    out = bytearray([flags, *lengths, SCALES[scale]])
    if scale == "raw":
        out += struct.pack("<f", raw_scale)
    out += bytes(MAGNITUDES[m] for m in mags)
    if budget is not None:
        out += bytes([0xA5]) + struct.pack("<H", budget // 4)
    elif mask is not None:
        kind, top_left, w, *extra = mask  # extra: cap (0-3), then alibi (bool), then tensor (0-3)
        cap = extra[0] if extra else 0
        alibi = extra[1] if len(extra) > 1 else False
        tensor = extra[2] if len(extra) > 2 else 0
        out += bytes([0x5A, int(top_left) | kind << 1 | cap << 3 | int(alibi) << 5 | tensor << 6, w])
    else:
        out += b"\0"
    out += struct.pack("<I", seed)
    for tensor, special, index, *raw in patches:
        out += bytes([TENSORS[tensor] + 3 * SPECIALS.index(special)])
        out += struct.pack("<I", index)[:3]
        if special in ("raw", "row_raw"):
            out += struct.pack("<f", raw[0])
    return bytes(out)


INF = float("inf")
ATTENTION = {
    "basic": attention_case(),
    "one_query_one_key_d1": attention_case(q=1, k=1, d=1),
    "edge_tiles_70": attention_case(q=70, k=70, d=70),
    "block_plus_one_causal": attention_case(q=65, k=64, d=64, causal=True, seed=2),
    "causal_more_queries_than_keys": attention_case(q=40, k=25, d=9, causal=True, seed=3),
    "causal_more_keys": attention_case(q=5, k=70, d=8, causal=True, seed=4),
    "gqa_batches": attention_case(q=17, k=33, d=8, batch=2, kv_heads=2, group=3, seed=5),
    "multi_query": attention_case(q=9, k=50, d=12, group=3, seed=6),
    "threads2": attention_case(q=70, k=70, d=16, threads=2, seed=7),
    "threads3_gqa_causal": attention_case(q=49, k=60, d=5, causal=True, kv_heads=2, group=2,
                                          threads=3, seed=8),
    "decoding_split_keys": attention_case(q=1, k=4099, d=8, decoding=True, seed=9),
    "decoding_three_chunks_threads": attention_case(q=4, k=6295, d=3, decoding=True, threads=2,
                                                    seed=10),
    "decoding_causal_nan_key": attention_case(q=3, k=4108, d=4, decoding=True, causal=True,
                                              seed=11, patches=[("k", "nan", 4000)]),
    "decoding_chunk_all_minus_inf": attention_case(q=1, k=4099, d=2, decoding=True, seed=12,
                                                   patches=[("q", "row_raw", 0, INF)]),
    "scale_zero": attention_case(scale="0", seed=13),
    "scale_negative": attention_case(scale="-1", seed=14),
    "scale_30_large_scores": attention_case(scale="30", q=20, k=70, d=16, seed=15),
    "scale_nan_is_error": attention_case(scale="raw", raw_scale=float("nan")),
    "scale_inf_is_error": attention_case(scale="raw", raw_scale=INF),
    "scale_1e20": attention_case(scale="1e20", seed=16),
    "scale_denormal": attention_case(scale="denormal", seed=17),
    "huge_queries": attention_case(mags=(1e30, 1, 1), seed=18),
    "keys_overflow_float": attention_case(mags=(1, 1e38, 1), seed=19),
    "denormal_values": attention_case(mags=(1, 1, 1e-39), seed=20),
    "zero_values": attention_case(mags=(1, 1, 0), seed=21),
    "tiny_scores": attention_case(mags=(1e-12, 1e-12, 1), seed=22),
    "nan_in_q_k_v": attention_case(q=30, k=70, d=10, seed=23,
                                   patches=[("q", "nan", 53), ("k", "nan", 401),
                                            ("v", "nan", 226)]),
    "inf_query_row": attention_case(q=10, k=20, d=4, seed=24, patches=[("q", "+inf", 9)]),
    "inf_values_both_signs": attention_case(q=10, k=20, d=4, seed=25,
                                            patches=[("v", "+inf", 9), ("v", "-inf", 13)]),
    "inf_value_behind_outlier": attention_case(q=8, k=70, d=6, seed=26,
                                               patches=[("v", "+inf", 2), ("k", "row_raw", 66, 60.0),
                                                        ("q", "row_raw", 0, 40.0)]),
    "outliers_move_running_max": attention_case(q=20, k=70, d=8, seed=27,
                                                patches=[("k", "outlier", i * 8 * 9) for i in range(7)]),
    "naive_over_budget": attention_case(q=17, k=65, d=4, budget=400, seed=28),
    "naive_budget_exact": attention_case(q=10, k=10, d=4, budget=400, seed=29),
    "max_values_sum_overflows": attention_case(q=4, k=10, d=3, seed=30,
                                               patches=[("v", "max", 0), ("v", "max", 3),
                                                        ("v", "max", 6)]),
    "window_causal_ends_inside_blocks": attention_case(q=70, k=70, d=16, causal=True,
                                                       mask=(0, False, 36), seed=32),
    "window_top_left_more_queries": attention_case(q=60, k=30, d=8, causal=True, mask=(0, True, 4),
                                                   threads=2, seed=33),
    "window_local_gqa": attention_case(q=40, k=66, d=12, kv_heads=2, group=2, mask=(1, False, 37),
                                       threads=3, seed=34),
    "window_right_only_top_left": attention_case(q=20, k=55, d=5, mask=(2, True, 5), seed=35),
    "top_left_causal": attention_case(q=50, k=20, d=7, causal=True, mask=(3, True, 0), seed=36),
    "window_decoding_split_keys": attention_case(q=2, k=4108, d=8, decoding=True, causal=True,
                                                 mask=(0, False, 200), threads=2, seed=37),
    "window_nan_key_outside": attention_case(q=30, k=60, d=6, causal=True, mask=(0, False, 10),
                                             seed=38, patches=[("k", "nan", 6), ("v", "+inf", 12)]),
    "softcap_2_outliers": attention_case(q=20, k=70, d=8, causal=True, mask=(3, False, 0, 1), seed=39,
                                         patches=[("k", "outlier", i * 8 * 9) for i in range(7)]),
    "softcap_50_window_top_left": attention_case(q=40, k=30, d=16, causal=True, mask=(0, True, 9, 3),
                                                 threads=2, seed=40),
    "softcap_30_inf_score": attention_case(q=10, k=20, d=4, mask=(3, False, 0, 2), seed=41,
                                           patches=[("q", "+inf", 9), ("v", "nan", 5)]),
    "alibi_gqa_causal": attention_case(q=33, k=50, d=8, causal=True, kv_heads=2, group=3,
                                       mask=(3, False, 0, 0, True), threads=3, seed=42),
    "alibi_decoding_folded_heads": attention_case(q=3, k=4108, d=8, decoding=True, kv_heads=2, group=2,
                                                  mask=(1, True, 90, 0, True), seed=43),
    "tensor_keep_gqa": attention_case(q=30, k=50, d=8, kv_heads=2, group=2, mask=(3, False, 0, 0, False, 1),
                                      threads=2, seed=44),
    "tensor_bias_causal_window": attention_case(q=40, k=60, d=16, causal=True, mask=(0, False, 20, 0, False, 2),
                                                seed=45, patches=[("v", "nan", 7), ("q", "huge", 3)]),
    "tensor_band_decoding": attention_case(q=3, k=4108, d=8, decoding=True, kv_heads=2, group=2,
                                           mask=(3, False, 0, 3, True, 3), threads=3, seed=46),
    "denormal_and_negative_zero": attention_case(q=6, k=6, d=3, seed=31,
                                                 patches=[("q", "denorm_min", 1), ("k", "-zero", 2),
                                                          ("v", "-denormal", 4)]),
}

# ---------------------------------------------------------------------------------------------
# .npy files


def npy_bytes(array, version=None):
    f = io.BytesIO()
    if version is None:
        np.save(f, array)
    else:
        np.lib.format.write_array(f, array, version=version)
    return f.getvalue()


def with_header(header, data=b"", version=(1, 0)):
    """A file with this header text (padded and terminated as numpy would) and data bytes."""
    header = header.encode("latin-1") if isinstance(header, str) else header
    length_bytes = 2 if version[0] == 1 else 4
    pad = 64 - (6 + 2 + length_bytes + len(header) + 1) % 64
    text = header + b" " * (pad % 64) + b"\n"
    length = struct.pack("<H" if length_bytes == 2 else "<I", len(text))
    return b"\x93NUMPY" + bytes(version) + length + text + data


def header(shape, descr="<f4", fortran="False"):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


rng = np.random.default_rng(1)
f4 = lambda *shape: rng.standard_normal(shape).astype("<f4")
good = npy_bytes(f4(3, 4))
# The float16 seeds draw from a generator of their own, so the older seeds keep their bytes.
rng_f2 = np.random.default_rng(2)
f2 = lambda *shape: rng_f2.standard_normal(shape).astype("<f2")
good_f2 = npy_bytes(f2(3, 4))
NPY = {
    # Valid: numpy's own files, every rank the CLI takes and the reader's limits.
    "valid_1d": npy_bytes(f4(5)),
    "valid_2d": good,
    "valid_3d": npy_bytes(f4(2, 3, 4)),
    "valid_4d": npy_bytes(f4(1, 2, 3, 4)),
    "valid_8d": npy_bytes(f4(1, 2, 1, 2, 1, 2, 1, 2)),
    "valid_version_2": npy_bytes(f4(2, 2), version=(2, 0)),
    "valid_version_3": npy_bytes(f4(2, 2), version=(3, 0)),
    "valid_specials": npy_bytes(np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], "<f4")),
    "valid_double_quotes_key_order": with_header(
        '{"shape": (2,), "fortran_order": False, "descr": "<f4"}', b"\0" * 8),
    # Valid where float16 is accepted (K and V; the fuzz case accepts it, npy_case.hpp): numpy's
    # float16 files, and its edge values (subnormals, the largest half, NaN, infinities).
    "valid_f2_2d": good_f2,
    "valid_f2_version_2": npy_bytes(f2(2, 3), version=(2, 0)),
    "valid_f2_specials": npy_bytes(np.array([np.nan, np.inf, -np.inf, -0.0, 2.0**-24, 2.0**-14,
                                             65504.0, -65504.0], "<f2")),
    # Invalid: what numpy can write but the reader does not take.
    "big_endian_f2": npy_bytes(f2(3).astype(">f2")),
    "big_endian": npy_bytes(f4(3).astype(">f4")),
    "float64": npy_bytes(np.zeros(3, "<f8")),
    "int32": npy_bytes(np.zeros(3, "<i4")),
    "fortran_order": npy_bytes(np.asfortranarray(f4(2, 3))),
    "zero_d": npy_bytes(np.float32(1.0)),
    "empty": npy_bytes(np.zeros((0, 3), "<f4")),
    "nine_dims": with_header(header("(1, 1, 1, 1, 1, 1, 1, 1, 1)"), b"\0" * 4),
    # Invalid: broken files.
    "truncated_data": good[:-5],
    "truncated_header": good[:30],
    "truncated_preamble": good[:9],
    "trailing_bytes": good + b"\0" * 4,
    "f2_truncated_odd_byte": good_f2[:-1],
    "f2_trailing_byte": good_f2 + b"\0",
    "f2_lying_shape_larger": with_header(header("(1000, 1000)", descr="<f2"), b"\0" * 16),
    "lying_shape_larger": with_header(header("(1000, 1000)"), b"\0" * 16),
    "huge_shape_overflow": with_header(header("(4611686018427387904, 8)")),
    "huge_declared_size": with_header(header("(1099511627776,)"), b"\0" * 64),
    "twenty_digit_dimension": with_header(header("(18446744073709551616,)")),
    "header_length_huge": b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + b"{" * 20,
    "header_length_past_end": b"\x93NUMPY\x01\x00" + struct.pack("<H", 9000) + b"{'descr'",
    "bad_magic": b"\x93NUMPX" + good[6:],
    "version_4": b"\x93NUMPY\x04\x00" + good[8:],
    "escape_in_string": with_header("{'descr': '<f\\4', 'fortran_order': False, 'shape': (1,), }",
                                    b"\0" * 4),
    "duplicate_key": with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                                 "'shape': (1,), }", b"\0" * 4),
    "missing_shape": with_header("{'descr': '<f4', 'fortran_order': False, }", b"\0" * 4),
    "shape_not_a_tuple": with_header(header("(5)"), b"\0" * 20),
    "leading_zero_dimension": with_header(header("(05,)"), b"\0" * 20),
    "non_ascii_header": with_header(header("(1,)").encode() + b"\xc3\xa9", b"\0" * 4),
    "no_newline": b"\x93NUMPY\x01\x00" + struct.pack("<H", 10) + b"{'descr' }" + b"\0" * 4,
    "unbalanced_dict": with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
                                   b"\0" * 4),
}


def write(directory, files, suffix):
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*" + suffix):
        old.unlink()
    for name, data in files.items():
        (directory / (name + suffix)).write_bytes(data)
    print(f"{directory.relative_to(HERE.parent)}: {len(files)} files")


if __name__ == "__main__":
    write(HERE / "corpus" / "attention", ATTENTION, ".bin")
    write(HERE / "corpus" / "npy", NPY, ".npy")
