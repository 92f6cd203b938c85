"""Live occlusion reuses the windows earlier jobs computed and publishes partial maps as it goes."""

from __future__ import annotations

import numpy as np
import pytest

from cxrxai.explain import explain
from cxrxai.explain import occlusion as occlusion_module
from cxrxai.live import PARTIAL, JobState, LiveWorker, explain_job


@pytest.fixture()
def worker():
    w = LiveWorker()
    yield w
    w.close()


@pytest.fixture()
def rows(tiny_net):
    """Images the model has scored since the last read (each occluded window is one)."""
    seen = [0]

    def count(_module, inputs):
        seen[0] += inputs[0].shape[0]

    handle = tiny_net.module.register_forward_pre_hook(count)

    def take() -> int:
        n, seen[0] = seen[0], 0
        return n

    yield take
    handle.remove()


def _map(worker, tiny_net, image, **params):
    job = worker.submit(explain_job(tiny_net, image, 1, "occlusion", params, owner="a", case_key=("s", "c1")))
    assert job.wait(60) and job.state == JobState.DONE, job.error
    return job.result


def test_a_finer_stride_computes_only_the_windows_no_earlier_setting_did(worker, tiny_net, image, rows):
    _map(worker, tiny_net, image, patch=4, stride=4, baseline="black")
    assert rows() == 16 + 1  # 4 × 4 windows and the clean pass
    fine = _map(worker, tiny_net, image, patch=4, stride=2, baseline="black")
    assert rows() == 49 - 16 + 1  # the 16 coarse windows are 4/2 windows: reused, not recomputed
    finer = _map(worker, tiny_net, image, patch=4, stride=1, baseline="black")
    assert rows() == 169 - 49 + 1
    for grid, stride in ((fine, 2), (finer, 1)):
        scratch = explain(tiny_net, image, 1, "occlusion", patch=4, stride=stride, baseline="black")
        np.testing.assert_allclose(grid.to_map(), scratch, rtol=1e-6, atol=1e-6 * np.abs(scratch).max())
    rows()  # the maps from scratch
    # another baseline scores other windows: nothing to reuse
    _map(worker, tiny_net, image, patch=4, stride=2, baseline="white")
    assert rows() == 16 + 1 + 33 + 1


def test_a_live_occlusion_job_publishes_partial_maps_before_its_grids(tiny_net, image, monkeypatch):
    monkeypatch.setattr(occlusion_module, "PAINT_EVERY_S", 0.0)  # a partial map after every batch
    params = {"patch": 4, "stride": 2, "baseline": "black", "batch_size": 8}
    job = explain_job(tiny_net, image, 1, "occlusion", params, owner="a", case_key=("s", "c2"))
    stages = list(job.run(lambda done, total: None, lambda: False))
    # 16 coarse windows in 2 batches, then the 33 missing fine ones in 5
    assert [name for name, _ in stages] == [PARTIAL, "coarse", *[PARTIAL] * 4, "final"]
    assert all(value.shape == (16, 16) for name, value in stages if name == PARTIAL)
