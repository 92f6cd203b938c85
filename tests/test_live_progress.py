"""The live progress label names the pass that is running, never the last pass's counts under the
next's name; a partial map leaves the counts alone."""

from __future__ import annotations

import threading

from cxrxai.live import PARTIAL, Job, LiveWorker, pass_label


def test_the_label_names_the_running_pass_at_every_moment_of_a_two_pass_occlusion():
    coarse_counted, at_boundary, fine_counted = threading.Event(), threading.Event(), threading.Event()
    gates = [threading.Event() for _ in range(3)]

    def run(progress, cancelled):
        for k in range(1, 50):
            progress(k, 49)
        coarse_counted.set()
        gates[0].wait(5)
        yield "coarse", "the coarse grid"
        at_boundary.set()  # the worker has taken the coarse grid: the fine pass starts now
        gates[1].wait(5)
        progress(8, 169)
        fine_counted.set()
        gates[2].wait(5)
        yield "final", "the fine map"

    worker = LiveWorker()
    try:
        job = worker.submit(Job(key=("two-pass",), owner="viewer", run=run))
        assert coarse_counted.wait(5)
        assert pass_label(job.counts, two_pass=True) == "coarse pass (stride = patch) · 49/49"
        gates[0].set()
        assert at_boundary.wait(5)
        assert pass_label(job.counts, two_pass=True) == "fine pass · starting"  # not "fine pass · 49/49"
        gates[1].set()
        assert fine_counted.wait(5)
        assert pass_label(job.counts, two_pass=True) == "fine pass · 8/169"
        gates[2].set()
        assert job.wait(5) and job.result == "the fine map"
    finally:
        for gate in gates:
            gate.set()
        worker.close()


def test_a_one_pass_job_counts_its_own_unit():
    assert pass_label(("", 3, 12), two_pass=False, unit="batches") == "batches · 3/12"
    assert pass_label(("", 0, 0), two_pass=False) == "windows · starting"


def test_a_partial_map_updates_the_jobs_partial_but_not_the_pass_it_counts():
    painted, gate = threading.Event(), threading.Event()

    def run(progress, cancelled):
        yield "coarse", "the coarse grid"
        progress(8, 169)
        yield PARTIAL, "8 of 169 fine windows"
        painted.set()
        gate.wait(5)
        yield "final", "the fine map"

    worker = LiveWorker()
    try:
        job = worker.submit(Job(key=("painting",), owner="viewer", run=run))
        assert painted.wait(5)
        assert job.partial == "8 of 169 fine windows" and job.state == "running"
        assert pass_label(job.counts, two_pass=True) == "fine pass · 8/169"
        gate.set()
        assert job.wait(5) and job.result == "the fine map"
    finally:
        gate.set()
        worker.close()
