"""The E1 corpus (numerics.lm.corpus) and the cross-block statistic (numerics.lm.blockstats).

Oracles: the SHA-256 recomputed from the normalised text; the split as a partition of positions;
independent blocks (i.i.d. characters) whose excess cross-block statistics vanish up to sampling
noise; the control text whose blocks share their characters by construction.
"""

import hashlib

import numpy as np
import pytest

from fastslow.numerics.lm import blockstats, corpus


@pytest.fixture(scope="module")
def text():
    return corpus.pydoc_corpus()


def test_corpus_is_deterministic_and_identified_by_its_hash(text):
    again = corpus.pydoc_corpus()
    assert again.sha256 == text.sha256
    assert np.array_equal(again.train, text.train) and np.array_equal(again.heldout, text.heldout)
    norm = corpus.normalise(corpus.raw_text())
    assert hashlib.sha256(norm.encode("utf-8")).hexdigest() == text.sha256
    assert corpus.normalise(norm) == norm  # idempotent
    assert text.chars == len(norm) and text.chars > 400_000
    assert "pydoc_data" in text.source


def test_normalisation_and_alphabet():
    assert corpus.VOCAB == 97 and corpus.ALPHABET[0] == "\n" and corpus.UNKNOWN == 96
    assert corpus.normalise("‘a’ “b” c–d—e…\tf\r\ng") == "'a' \"b\" c-d-e...    f\ng"
    toks = corpus.encode("Hi!\n°")
    assert toks.tolist() == [corpus.ALPHABET.index(c) for c in "Hi!\n"] + [corpus.UNKNOWN]
    assert corpus.decode(toks) == "Hi!\n¤"


def test_split_is_a_partition_of_positions():
    pos = np.arange(50_003)
    train, held = corpus.split(pos, chunk=100, heldout_every=10)
    assert set(train).isdisjoint(held)
    assert np.array_equal(np.sort(np.concatenate([train, held])), pos)
    assert np.all((held // 100) % 10 == 9) and np.all((train // 100) % 10 != 9)
    with pytest.raises(ValueError, match="heldout_every"):
        corpus.split(pos, heldout_every=1)


def test_real_split_sizes(text):
    assert 0.08 < text.heldout.size / text.chars < 0.12


def test_control_corpus_is_deterministic_and_shares_blocks(text):
    a = corpus.noisy_copy_corpus(text, 16, [0, 7])
    b = corpus.noisy_copy_corpus(text, 16, [0, 7])
    assert a.sha256 == b.sha256 and np.array_equal(a.train, b.train)
    assert a.sha256 != corpus.noisy_copy_corpus(text, 16, [1, 7]).sha256
    blocks = a.train[: 16 * 1000].reshape(1000, 16)
    # with flip = 0 and refresh = 0 every block draws from the first source only
    same = corpus.noisy_copy(text.train, 16, 3, flip=0.0, refresh=0.0)
    assert set(np.unique(same)) <= set(text.train[:4].tolist())
    assert blocks.shape == (1000, 16)


def test_independent_blocks_have_no_excess_structure():
    rng = np.random.default_rng(5)
    iid = rng.choice(20, size=200_000, p=rng.dirichlet(np.ones(20)))
    st = blockstats.neighbour_mutual_information(iid, 16, 20, seed=1)
    # plug-in MI bias (V−1)²/(2 n ln 2) ≈ 1e-4 bits here, shared by the shuffled baseline
    assert abs(st["mi_excess_bits"]) < 1e-3
    assert abs(st["bag_gain_excess_bits"]) < 1e-3


def test_control_carries_more_cross_block_structure_than_the_text(text):
    real = blockstats.neighbour_mutual_information(text.train, 16, corpus.VOCAB, seed=0)
    ctl = blockstats.neighbour_mutual_information(
        corpus.noisy_copy_corpus(text, 16, [0, 7]).train, 16, corpus.VOCAB, seed=0
    )
    assert 0 < real["bag_gain_excess_fraction"] < 0.05 < ctl["bag_gain_excess_fraction"]
    assert real["bag_gain_shuffled_bits"] >= 0 and real["mi_shuffled_bits"] >= 0


def test_histograms_count_every_complete_block():
    H = blockstats.block_histograms(np.array([0, 1, 1, 2, 2, 2, 0]), 3, 4)
    assert H.tolist() == [[1, 2, 0, 0], [0, 0, 3, 0]]
