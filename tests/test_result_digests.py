"""A change in results cannot go unnoticed: the pinned runs' schedule digests (tests/result_digests.py) must
match, or ``MODEL_VERSION`` must have been bumped and the digests regenerated with it."""

from __future__ import annotations

from result_digests import COMMAND, digests, pinned_runs, stored

from pdors import POLICIES
from pdors.version import MODEL_VERSION


def test_every_policy_and_both_pdors_readings_are_pinned() -> None:
    runs = pinned_runs()
    assert {r.policy for r in runs} == set(POLICIES)
    assert {r.params.get("on_rounding_failure") for r in runs if r.policy == "pdors"} == {"found_solutions", "reject"}
    assert set(stored()[1]) == {r.key for r in runs}, f"the pinned set changed: regenerate with `{COMMAND}`"


def test_results_match_the_pinned_digests_of_this_model_version() -> None:
    version, before = stored()
    assert version == MODEL_VERSION, (
        f"MODEL_VERSION is {MODEL_VERSION}, the digests were pinned under {version}: regenerate them with `{COMMAND}`"
    )
    now = digests()
    changed = [k for k in before if now.get(k) != before[k]]
    assert not changed, (
        f"{len(changed)} of {len(before)} pinned runs changed their schedule under MODEL_VERSION {MODEL_VERSION} "
        f"({', '.join(changed[:5])}): a change in pdors/ changed results, so recorded runs must not be reused; "
        f"bump pdors.version.MODEL_VERSION, then regenerate the digests with `{COMMAND}`"
    )
