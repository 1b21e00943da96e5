"""A conclusion part a main instance is built to decide is decided there, not skipped as "not
evaluated" (a skipped part holds vacuously: a cosmic-ray survivor inverted D5's size test and
skipped the exact kernel constant on the very instances it is meant for)."""

from fastslow.verify.registry import run_check


def test_d5_decides_its_exact_kernel_constant_on_its_main_instance():
    v = run_check("D5")
    part = v.conclusion["kernel_constant_exact"]
    assert v.params["T"] <= v.params["exact_max_T"]
    assert part.holds and not part.rule.startswith("not evaluated"), part
