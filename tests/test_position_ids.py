"""Tests of posenc.positions_from_mask (position ids of the real tokens of a padded batch)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import posenc


def _oracle(mask_row):
    """Count the real tokens seen so far, one token at a time."""
    out, seen = [], 0
    for m in mask_row:
        if m:
            out.append(seen)
            seen += 1
        else:
            out.append(0)
    return out


def test_worked_example_left_and_right_padding():
    got = posenc.positions_from_mask([[0, 0, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [[0, 0, 0, 1, 2], [0, 1, 2, 0, 0], [0, 1, 2, 3, 4]])


@given(st.lists(st.lists(st.booleans(), min_size=6, max_size=6), min_size=1, max_size=4))
def test_matches_the_loop_oracle(rows):
    got = posenc.positions_from_mask(np.array(rows))
    assert got.shape == (len(rows), 6)
    for row, ids in zip(rows, got):
        assert ids.tolist() == _oracle(row)


@given(st.integers(0, 10), st.integers(1, 10))
def test_left_padding_does_not_move_the_real_tokens(pads, n):
    """The real tokens get 0..n-1 whatever the number of pads in front of them."""
    ids = posenc.positions_from_mask([0] * pads + [1] * n)
    np.testing.assert_array_equal(ids[pads:], np.arange(n))


def test_same_embedding_with_and_without_left_padding():
    torch.manual_seed(0)
    emb = posenc.LearnedPositionalEmbedding(8, 4)
    x = torch.randn(5, 4, dtype=torch.float64)
    padded = torch.cat([torch.zeros(3, 4, dtype=torch.float64), x])
    mask = [0, 0, 0] + [1] * 5
    out = emb(padded, positions=posenc.positions_from_mask(mask))
    torch.testing.assert_close(out[3:], emb(x), rtol=0, atol=0)


def test_accepts_a_torch_mask():
    ids = posenc.positions_from_mask(torch.tensor([0, 1, 1]))
    np.testing.assert_array_equal(ids, [0, 0, 1])


@pytest.mark.parametrize("bad, message", [
    ([0, 2, 1], "only 0"),
    ([[[1, 1]]], "shape"),
    ([1.0, np.nan], "finite"),
])
def test_bad_masks_are_refused_with_a_message(bad, message):
    with pytest.raises(ValueError, match=message):
        posenc.positions_from_mask(bad)


def test_text_is_refused():
    with pytest.raises(TypeError, match="mask"):
        posenc.positions_from_mask("1101")


def test_needs_no_torch():
    """A numpy formula: computing position ids neither imports torch nor fails where torch cannot load."""
    code = ("import sys; sys.modules['torch'] = None; import posenc; "
            "assert posenc.positions_from_mask([0, 1, 1]).tolist() == [0, 0, 1]")
    subprocess.run([sys.executable, "-c", code], check=True)
