"""The phases of the demo build, in a module of their own: the command line offers them without
importing the build (torch, torchvision, every stage)."""

__all__ = ["PHASES"]

#: Phases of the demo build. ``quick`` is what the app needs to open (cases, predictions,
#: thresholds, Grad-CAM/Grad-CAM++ for every test image × finding: about two minutes on 2 CPU
#: cores); ``evidence`` is the rest (their scores first), sized so that every number the explainer
#: pages show rests on enough cases (see :data:`~cxrxai.pipeline.demo.EVIDENCE`); ``all`` is both,
#: in that order.
PHASES = ("all", "quick", "evidence")
