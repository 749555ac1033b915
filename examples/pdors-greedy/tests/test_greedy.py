"""The example policy runs through pdors like a built-in one, and each broken one fails as it should."""

from __future__ import annotations

import pytest

import pdors
from pdors.errors import ConfigError

SMALL = {"machines": 6, "jobs": 12, "slots": 10, "seed": 3}


@pytest.mark.parametrize("name", ["greedy", "pdors_greedy.policy:Greedy"])
def test_greedy_schedules_are_valid_and_earn_utility(name: str) -> None:
    done = pdors.run({**SMALL, "policy": name})
    assert done.validation.violations == []
    assert done.summary.total_utility > 0
    assert done.summary.policy_stats["placements"] > 0


def test_more_workers_per_job_changes_the_schedule() -> None:
    one = pdors.run({**SMALL, "policy": "greedy", "params": {"max_workers": 1}}).summary
    many = pdors.run({**SMALL, "policy": "greedy", "params": {"max_workers": 32}}).summary
    assert one.schedule_digest != many.schedule_digest


def test_a_bad_parameter_is_named() -> None:
    with pytest.raises(ConfigError, match=r"params\.max_workers: .*outside"):
        pdors.run({**SMALL, "policy": "greedy", "params": {"max_workers": 0}})


def test_over_capacity_is_judged_by_the_validator() -> None:
    done = pdors.run({**SMALL, "policy": "pdors_greedy.broken:OverCapacity"})
    assert any(v.kind == "capacity" for v in done.validation.violations)


@pytest.mark.parametrize(
    ("name", "error"),
    [("pdors_greedy.broken:WrongShape", "shape"), ("pdors_greedy.broken:Raises", "example failure")],
)
def test_a_broken_policy_fails_its_run(name: str, error: str) -> None:
    with pytest.raises(Exception, match=error):
        pdors.run({**SMALL, "policy": name})
