"""posenc.learned: the table, its gradient, its ceiling."""

import pytest
import torch

import posenc


def test_parameter_count_bert():
    assert posenc.learned_parameter_count(512, 768) == 393_216
    module = posenc.LearnedPositionalEmbedding(512, 768)
    assert sum(p.numel() for p in module.parameters()) == posenc.learned_parameter_count(512, 768)


def test_forward_adds_the_rows():
    module = posenc.LearnedPositionalEmbedding(10, 4)
    x = torch.randn(2, 6, 4)
    torch.testing.assert_close(module(x) - x, module.weight[:6].expand(2, 6, 4))
    torch.testing.assert_close(module(x, positions=[3, 4, 5, 6, 7, 8]) - x, module.weight[3:9].expand(2, 6, 4))


def test_only_used_rows_get_gradient():
    module = posenc.LearnedPositionalEmbedding(10, 4)
    upstream = torch.randn(3, 6, 4)
    module(torch.zeros(3, 6, 4)).backward(upstream)
    torch.testing.assert_close(module.weight.grad[:6], upstream.sum(0))
    assert (module.weight.grad[6:] == 0).all()


def test_position_beyond_the_table_is_a_clear_error():
    module = posenc.LearnedPositionalEmbedding(8, 4)
    with pytest.raises(ValueError, match=r"position 8 is beyond this learned table: max_len=8 covers positions 0..7"):
        module(torch.zeros(1, 9, 4))
    with pytest.raises(ValueError, match=r"positions must be >= 0"):
        module(torch.zeros(1, 2, 4), positions=[-1, 0])
    with pytest.raises(ValueError, match=r"positions must be integers"):
        module(torch.zeros(1, 2, 4), positions=[0.5, 1])
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., seq, 4\), got \(1, 2, 5\)"):
        module(torch.zeros(1, 2, 5))
    with pytest.raises(ValueError, match=r"max_len must be an integer >= 1, got 0"):
        posenc.LearnedPositionalEmbedding(0, 4)
