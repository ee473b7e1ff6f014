"""posenc.t5_bucket, for chapter 04_relative: T5 buckets against the Hugging Face algorithm written out in torch
(float32, every offset in -1000..1000, boundary-sensitive settings included)."""

import math

import numpy as np
import pytest
import torch

import posenc
from test_relative import t5_bucket_reference as hf_relative_position_bucket  # T5's code, written out once


# The chapter's exercise settings, T5's own, and settings whose bucket edges fall exactly on an integer offset
# (18/128: offsets 8, 16, 64; 20/160; 38/288), where float64 and float32 round the logarithm differently.
SETTINGS = [(32, 128), (16, 64), (64, 256), (32, 64), (16, 256), (64, 128), (18, 128), (20, 160), (38, 288),
            (4, 8)]
CASES = [(True, nb, md) for nb, md in SETTINGS] + [(False, nb, md) for nb, md in SETTINGS] + [(False, 2, 2)]


@pytest.mark.parametrize("bidirectional, num_buckets, max_distance", CASES)
def test_t5_bucket_equals_hugging_face_for_every_offset(bidirectional, num_buckets, max_distance):
    rel = torch.arange(-1000, 1001)
    expected = hf_relative_position_bucket(rel, bidirectional, num_buckets, max_distance).numpy()
    got = posenc.t5_bucket(rel.numpy(), bidirectional, num_buckets, max_distance)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.int64


def test_t5_bucket_boundary_is_float32_like_t5():
    # 18 buckets, bidirectional: 9 per side, max_exact 4; offset -8 is mathematically the first offset of
    # bucket 4 + log(2)/log(32)*5 = 5. float32 (T5's code) gives 5; the same formula in float64 gives 4.
    assert posenc.t5_bucket(-8, True, 18, 128) == 5
    assert int(np.log(np.float32(8 / 4)) / np.float32(math.log(128 / 4)) * np.float32(5)) == 1
    assert int(math.log(8 / 4) / math.log(128 / 4) * 5) == 0  # float64: 0.999..., the pitfall the chapter shows


def test_t5_bucket_grid_keeps_shape():
    rel = posenc.relative_positions(7, 11)
    got = posenc.t5_bucket(rel, False, 16, 64)
    assert got.shape == (7, 11)
    expected = hf_relative_position_bucket(torch.as_tensor(rel), False, 16, 64).numpy()
    np.testing.assert_array_equal(got, expected)
