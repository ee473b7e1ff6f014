"""posenc.permutation_matrix, and the equivariance of attention it states (chapter 1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc


def _oracle(perm):
    """Slow, loop-based: P[i, j] = 1 exactly when j = perm[i]."""
    n = len(perm)
    p = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if j == perm[i]:
                p[i, j] = 1.0
    return p


def test_worked_example_three_tokens():
    # The chapter's reordering "A, B, C" -> "B, C, A".
    p = posenc.permutation_matrix([1, 2, 0])
    assert p.dtype == np.float64 and p.shape == (3, 3)
    np.testing.assert_array_equal(p, [[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(p @ x, [[0, 1], [1, 1], [1, 0]])


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_matches_the_loop_oracle_for_every_permutation(n):
    for perm in itertools.permutations(range(n)):
        np.testing.assert_array_equal(posenc.permutation_matrix(perm), _oracle(perm))


permutations = st.integers(1, 9).flatmap(lambda n: st.permutations(list(range(n))))


@settings(max_examples=60, deadline=None)
@given(permutations)
def test_reorders_rows_is_orthogonal_and_composes(perm):
    n = len(perm)
    p = posenc.permutation_matrix(perm)
    x = np.arange(n * 2, dtype=np.float64).reshape(n, 2)
    np.testing.assert_array_equal(p @ x, x[list(perm)])
    np.testing.assert_array_equal(p @ p.T, np.eye(n))
    inverse = np.argsort(perm)
    np.testing.assert_array_equal(posenc.permutation_matrix(inverse), p.T)
    # Reordering by perm, then by sigma, is reordering by perm[sigma].
    sigma = np.roll(np.arange(n), 1)
    np.testing.assert_array_equal(posenc.permutation_matrix(sigma) @ p, posenc.permutation_matrix(np.asarray(perm)[sigma]))


@settings(max_examples=40, deadline=None)
@given(permutations, st.integers(0, 2**32 - 1))
def test_attention_is_permutation_equivariant_and_the_causal_mask_breaks_it(perm, seed):
    rng = np.random.default_rng(seed)
    n = len(perm)
    x = rng.normal(size=(n, 4))
    wq, wk, wv = rng.normal(size=(3, 4, 4))
    wq, wk = wq / 4, wk / 4  # (small scores: the softmax cannot saturate, so a changed prefix changes an output)
    p = posenc.permutation_matrix(perm)

    def self_attention(z, causal=False):
        return posenc.attention(z @ wq, z @ wk, z @ wv, causal=causal)

    np.testing.assert_allclose(self_attention(p @ x), p @ self_attention(x), atol=1e-12)
    if list(perm) != list(range(n)):
        # Generic inputs: some token now has a different prefix, so its output changes.
        assert not np.allclose(self_attention(p @ x, causal=True), p @ self_attention(x, causal=True), atol=1e-9)


@pytest.mark.parametrize("bad, kind, words", [
    ([0, 0, 1], ValueError, "exactly once"),
    ([1, 2], ValueError, "exactly once"),
    ([], ValueError, "at least one"),
    ([0.5, 1], ValueError, "integers"),
    ([-1, 0], ValueError, ">= 0"),
    ([[0, 1]], ValueError, "1-D"),
    (2, TypeError, "1-D sequence"),
    ("ab", TypeError, "sequence of numbers"),
])
def test_bad_input_is_refused_in_words(bad, kind, words):
    with pytest.raises(kind, match="perm") as info:
        posenc.permutation_matrix(bad)
    assert words in str(info.value)
