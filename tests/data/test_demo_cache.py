"""The demo's rendered phantoms are a cache that two processes never render at once: the second
waits for the first one's files and reads them (the app's background build beside a command, two
test workers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
