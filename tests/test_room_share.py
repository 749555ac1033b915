"""PD-ORS's gain as a share of the room between the best other policy and the instance's ceiling."""

import math

import pandas as pd
import pytest

from pipeline.results.summary import with_ratio


def test_room_share_by_hand() -> None:
    runs = pd.DataFrame(
        {
            "kind": "sim",
            "status": "ok",
            "instance_id": ["a", "a", "a", "b", "b"],
            "policy": ["pdors", "drf", "fifo", "pdors", "drf"],
            "total_utility": [8.0, 6.0, 2.0, 3.0, 5.0],
            "utility_ceiling": [10.0, 10.0, 10.0, 5.0, 5.0],
        }
    )
    share = with_ratio(runs)["room_share"].tolist()
    # a: (8 - 6) / (10 - 6) = 0.5; b: DRF already at the ceiling, no room
    assert share[0] == pytest.approx(0.5) and math.isnan(share[3])
    assert all(math.isnan(x) for x in share[1:3] + share[4:])
