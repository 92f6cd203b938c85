"""The demo's rendered phantoms are a cache that two processes never render at once: the second
waits for the first one's files and reads them (the app's background build beside a command, two
test workers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Each process loads the demo cohort once the test says go; it prints how many films it rendered.
SCRIPT = """
import sys, time
from pathlib import Path
from cxrxai.data.demo import load_demo
from cxrxai.data.phantom import PhantomConfig

folder, go = Path(sys.argv[1]), Path(sys.argv[2])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.01)
rendered = []
data = load_demo(PhantomConfig(size=96, n_images=120, seed=3), folder, workers=1,
                 progress=lambda done, n: rendered.append(done))
print(len(rendered), len(data.specs), int(data.images[5].sum()), flush=True)
"""


def test_two_processes_render_the_phantoms_once(tmp_path):
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path / "demo"), str(go)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    assert [p.stdout.readline().strip() for p in procs] == ["ready", "ready"]  # both imported, both waiting
    go.touch()
    out = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    rendered = sorted(int(o[0]) for o in out)
    assert rendered == [0, 120], out  # one rendered all 120 films, the other none
    assert out[0][1:] == out[1][1:]  # and both read the same cohort
    assert not [f.name for f in (tmp_path / "demo").iterdir() if ".tmp" in f.name]  # no half-written file left


def test_a_lazy_cohort_reads_the_shipped_ground_truth_and_draws_only_the_films_asked_for(tmp_path):
    """:func:`lazy_demo` without a render cache: the annotations are the shipped copy's, a film is
    drawn when it is first indexed (the same pixels as the rendered cache's row), nothing is written
    to the cache folder; without a shipped copy everything is rendered as before."""
    import gzip
    import json

    import numpy as np
    import pandas as pd

    from cxrxai.data.demo import cache_files, given_or_loaded, lazy_demo, load_demo, shipped_annotations
    from cxrxai.data.phantom import PhantomConfig
    from cxrxai.errors import DataError

    config = PhantomConfig(size=64, n_images=40, seed=5)
    rendered = load_demo(config, tmp_path / "rendered", workers=1)
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    shipped_annotations(config, shipped).write_bytes(gzip.compress(cache_files(config, tmp_path / "rendered")[1]
                                                                   .read_bytes()))
    empty = tmp_path / "empty"
    lazy = lazy_demo(config, empty, annotations=shipped)
    pd.testing.assert_frame_equal(lazy.annotations, rendered.annotations)
    assert [s.to_json() for s in lazy.specs] == [s.to_json() for s in rendered.specs]
    assert lazy.images.shape == rendered.images.shape and lazy.images.drawn == 0
    np.testing.assert_array_equal(lazy.images[[3, 17, 3]], rendered.images[[3, 17, 3]])
    np.testing.assert_array_equal(lazy.images[-1], rendered.images[-1])
    assert lazy.images.drawn == 3  # rows 3, 17 and 39, each drawn once
    assert not any(empty.glob("images-*.npy")) and not any(empty.glob("annotations-*"))
    # one cohort per process: a second call draws nothing again
    assert lazy_demo(config, empty, annotations=shipped).images is lazy.images
    # a build given the cohort of another configuration refuses it
    with pytest.raises(DataError, match="another phantom configuration"):
        given_or_loaded(lazy, PhantomConfig(size=64, n_images=41, seed=5), empty)
    assert given_or_loaded(lazy, config, empty) is lazy
    # a film whose records in the copy are not the generator's: drawing it says so
    records = json.loads(gzip.decompress(shipped_annotations(config, shipped).read_bytes()))
    box = next(r for r in records if r["kind"] == "box")
    box["w"] += 1
    other = tmp_path / "edited"
    other.mkdir()
    shipped_annotations(config, other).write_bytes(gzip.compress(json.dumps(records).encode()))
    edited = lazy_demo(config, tmp_path / "empty2", annotations=other)
    row = next(i for i, s in enumerate(edited.specs) if s.image_id == box["image_id"])
    edited.images[(row + 1) % len(edited.specs)]  # another film draws
    with pytest.raises(DataError, match=f"annotations read for {box['image_id']} are not the phantom generator"):
        edited.images[[row]]
    # without a shipped copy: the whole cohort is rendered into the folder, as load_demo does
    full = lazy_demo(config, tmp_path / "other", annotations=tmp_path / "nothing-here")
    assert isinstance(full.images, np.memmap) and cache_files(config, tmp_path / "other")[0].is_file()
