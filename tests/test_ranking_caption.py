"""The explainer ranking's caption says the resamples the report ran with (an option), not a constant."""

from __future__ import annotations

import pandas as pd

from cxrxai.summaries import ranking_caption


class _Store:
    """A user's store with two boxes drawn by the reference reader."""

    def datasets(self):
        return pd.DataFrame({"dataset": ["folder"]})

    def annotations(self, *, reader=None):
        return pd.DataFrame({"kind": ["box", "box"], "reader": reader})


def test_the_caption_names_the_resamples_run():
    assert "200 resamples" in ranking_caption(_Store(), n_boot=200)
    assert "1,000 resamples" in ranking_caption(_Store())
    assert ranking_caption(_Store()).endswith("Against the reference reader (gt): 2 boxes.")


class _NamedDemo(_Store):
    """A user's folder dataset given ``name=demo``: not the phantom demo."""

    def datasets(self):
        return pd.DataFrame({"dataset": ["demo"], "source": ["/home/me/xrays"]})


def test_a_folder_named_demo_is_not_the_phantom_demo():
    assert ranking_caption(_NamedDemo()).endswith("Against the reference reader (gt): 2 boxes.")
