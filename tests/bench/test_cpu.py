"""bench/cpu.py: what each part spent between two samples of /proc."""

from __future__ import annotations

import os

from bench import cpu


def test_a_part_spends_the_difference_and_a_new_process_counts_from_nothing() -> None:
    before: cpu.Sample = {"this": {1: 2.0}, "database": {10: 5.0, 11: 1.0}}
    after: cpu.Sample = {"this": {1: 2.5}, "database": {10: 5.25, 11: 1.0, 12: 0.5}}
    assert cpu.spent(before, after) == {"this": 0.5, "database": 0.75}


def test_a_live_process_has_seconds_and_a_gone_one_has_none() -> None:
    mine = cpu.seconds(os.getpid())
    assert mine is not None
    assert mine > 0  # this interpreter has imported pytest, at least
    assert cpu.seconds(2**22 + 1) is None  # above Linux's highest pid
    assert cpu.sample({"gone": [2**22 + 1]}) == {"gone": {}}
