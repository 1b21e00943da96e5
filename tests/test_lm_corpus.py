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
    assert np.array_equal(again.validation, text.validation)
    assert again.split_sha256() == text.split_sha256()
    assert len(set(text.split_sha256().values())) == 3
    norm = corpus.normalise(corpus.raw_text())
    assert hashlib.sha256(norm.encode("utf-8")).hexdigest() == text.sha256
    assert corpus.normalise(norm) == norm  # idempotent
    removed = sum(
        text.stats[k]["chars_before"] - text.stats[k]["chars_after"]
        for k in ("heldout", "validation")
    )
    assert text.chars + removed == len(norm) and text.chars > 400_000  # fmt: skip
    assert "pydoc_data" in text.source


def test_normalisation_and_alphabet():
    assert corpus.VOCAB == 97 and corpus.ALPHABET[0] == "\n" and corpus.UNKNOWN == 96
    assert corpus.normalise("‘a’ “b” c–d—e…\tf\r\ng") == "'a' \"b\" c-d-e...    f\ng"
    toks = corpus.encode("Hi!\n°")
    assert toks.tolist() == [corpus.ALPHABET.index(c) for c in "Hi!\n"] + [corpus.UNKNOWN]
    assert corpus.decode(toks) == "Hi!\n¤"


def test_split_is_a_partition_of_positions():
    pos = np.arange(50_003)
    train, val, held = corpus.split(pos, chunk=100, every=10)
    assert set(train).isdisjoint(held) and set(train).isdisjoint(val) and set(val).isdisjoint(held)
    assert np.array_equal(np.sort(np.concatenate([train, val, held])), pos)
    assert np.all((held // 100) % 10 == 9) and np.all((val // 100) % 10 == 4)
    assert np.all(((train // 100) % 10 != 9) & ((train // 100) % 10 != 4))
    with pytest.raises(ValueError, match="every"):
        corpus.split(pos, every=2)


def test_real_split_sizes(text):
    assert 0.05 < text.heldout.size / text.chars < 0.1
    assert 0.05 < text.validation.size / text.chars < 0.1


def test_deduplication_against_training():
    """Oracle: a brute-force scan of every held-out string against every training string."""
    rng = np.random.default_rng(2)
    train = rng.integers(0, 4, 3000).astype(np.uint8)
    part = np.concatenate([rng.integers(0, 4, 200), train[100:180], rng.integers(0, 4, 150)])
    part = part.astype(np.uint8)
    K = 12
    tb = train.tobytes()
    brute = np.mean([part[i : i + K].tobytes() in tb for i in range(part.size - K + 1)])
    assert corpus.near_duplicate_fraction(part, train, K) == pytest.approx(brute, abs=1e-12)
    kept, st = corpus.deduplicate(part, train, K)
    assert st["fraction_before"] == pytest.approx(brute, abs=1e-12) and st["fraction_before"] > 0.1
    assert st["fraction_after"] <= 0.02 and st["chars_after"] == kept.size <= part.size - 80
    assert corpus.near_duplicate_fraction(kept, train, K) == st["fraction_after"]


def test_real_heldout_is_deduplicated(text):
    for split in ("heldout", "validation"):
        st = text.stats[split]
        assert st["fraction_before"] > 0.2 and st["fraction_after"] <= 0.05
        assert corpus.near_duplicate_fraction(getattr(text, split), text.train) == pytest.approx(
            st["fraction_after"]
        )


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


@pytest.mark.parametrize("n, P", [(1000, 16), (1001, 7), (64, 64), (9, 8)])
def test_the_control_text_is_whole_blocks_of_its_input_and_each_repeats_its_source(n, P):
    """``len // P`` whole blocks of ``P``, whatever the remainder; without noise (``flip = 0``) and
    with every block fresh (``refresh = 1``), block ``b`` draws only from source ``b`` (mod the
    number of sources): the bag of ``bag`` consecutive input characters it copies."""
    tokens = np.random.default_rng(n).integers(0, 50, size=n)
    out = corpus.noisy_copy(tokens, P, 0)
    assert out.shape == ((n // P) * P,) and set(out.tolist()) <= set(tokens.tolist())
    fresh = corpus.noisy_copy(tokens, P, 0, bag=4, flip=0.0, refresh=1.0)
    sources = tokens[: (n // 4) * 4].reshape(-1, 4)
    for b, block in enumerate(fresh.reshape(-1, P)):
        assert set(block.tolist()) <= set(sources[b % len(sources)].tolist())


def test_a_control_text_shorter_than_one_block_or_one_bag_is_refused_in_one_line():
    for n, P, bag in ((5, 8, 4), (3, 2, 4)):
        with pytest.raises(ValueError, match=f"{n} tokens make no block of P={P}"):
            corpus.noisy_copy(np.arange(n), P, 0, bag=bag)


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


def test_the_cached_corpus_cannot_be_written_to(text):
    """``pydoc_corpus`` is cached and shared by every run of a process: its splits are read-only,
    so no caller can change the text another run trains or is evaluated on."""
    for name in ("train", "heldout", "validation"):
        split = getattr(text, name)
        with pytest.raises(ValueError, match="read-only"):
            split[0] = split[1]
