"""Live recomputation for interactive use: one device worker, a queue, cancellable jobs.

The app submits "recompute this map" jobs; a single background thread runs them one at a time
on the device (so GPU memory and CPU cores are not oversubscribed), newest-first within a
viewer (a viewer's newer request supersedes its queued older ones), with progress, partial
results (the coarse occlusion grid before the fine one, partial maps while a pass computes) and
cancellation. Occlusion window scores are kept per model, image, target and window setting
(:mod:`.windows`), so a new stride computes only the windows no earlier one did. Results are kept in
a small LRU cache keyed by everything that determines the map, so moving a slider back is
instant. No Streamlit here: pages poll :class:`Job` objects.

With ``LiveWorker(process=True)`` (the app's choice) the maps are computed in one spawned
child process: torch releases the GIL inside each operator and must win it back after, so in
a busy server process (page reruns, websockets) every forward waits on other threads. The
worker thread then only relays progress and partial results, and a job that knows its model's
weights file runs there; others run in the thread. The app submits :func:`case_job` s (store
path, image id, label, weights path): the child reads and preprocesses the image itself.
"""


from .child import ChildError
from .jobs import PARTIAL, Job, JobState, case_job, explain_job, pass_label, warm_job
from .worker import LiveWorker

__all__ = [
    "PARTIAL",
    "ChildError",
    "Job",
    "JobState",
    "LiveWorker",
    "case_job",
    "explain_job",
    "pass_label",
    "warm_job",
]
