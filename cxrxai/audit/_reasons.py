"""Why a row or film was left out or changed, in a few words a user can group by.

A problem row's text is ``"<what was wrong>; <what was done>"`` (the adapters' ``Problems.add``,
the decode stage, the importer). :func:`reason` names what was wrong from a short list of known
messages, else a generic form of the message (paths, quoted values and numbers blanked out, so
a thousand unreadable files make one group, not a thousand); :func:`action` is what was done.
"""

from __future__ import annotations

import re

__all__ = ["KNOWN_REASONS", "action", "reason"]

#: (reason, pattern) in the order tried; the first pattern found in the message names it.
KNOWN_REASONS: tuple[tuple[str, str], ...] = (
    ("file missing", r"^no image file at |^missing file "),
    ("unreadable file", r"is not a readable|cannot decode the pixels|has no pixel data"),
    ("film too large", r"images above \d+ px a side are refused"),
    ("film too small", r"is only \d+×\d+ px"),
    ("colour film", r"is a colour image"),
    ("not one grey frame", r"-D pixels \(shape"),
    ("NaN or infinite pixels", r"NaN or infinite value"),
    ("unsupported pixel type", r"^unsupported pixel type"),
    ("path outside the dataset folder", r"escapes the dataset root"),
    ("unknown label", r"^unknown (box )?label|^box of .*which is none of the dataset's labels"),
    ("box label spelled otherwise", r"box\(es\) labelled .*, the dataset's label .* spelled otherwise"),
    ("split spelled otherwise", r"row\(s\) with split .*, the .* split spelled otherwise"),
    ("column name with spaces around it", r"^column name\(s\) .* have spaces around them"),
    ("label value not 0, 1 or blank", r"allowed 0, 1 or blank"),
    ("absurd age", r"^absurd age"),
    ("sex not M or F", r"^sex .* is not one of M, F"),
    ("box outside the image", r"box .*(lies outside|outside the image|above/left of the image)"),
    ("box crossing the image edge", r"box .*crosses the edge of"),
    ("annotation of an unknown image", r"annotation for an image not in|box for an image missing from"),
    ("prediction of an unknown image", r"^prediction for an image not in the dataset"),
    ("label without a threshold", r"^no threshold for label"),
    ("threshold of an unpredicted label", r"^threshold for .*which the predictions do not have"),
)
_COMPILED = tuple((name, re.compile(pattern)) for name, pattern in KNOWN_REASONS)
_PATH = re.compile(r"\S*[/\\]\S*")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\d+(\.\d+)?")
_MAX_GENERIC = 60


def _split(message: str) -> tuple[str, str | None]:
    what, sep, done = str(message).rpartition("; ")
    return (what, done) if sep else (str(message), None)


def reason(message: str) -> str:
    """What was wrong, as a group name.

    >>> reason("/data/x/00001.png is not a readable PNG/JPEG image (corrupt): broken data; image skipped")
    'unreadable file'
    >>> reason("weird header 'abc' in /data/x.dcm at byte 12; image skipped")
    'weird header … in <file> at byte N'
    """
    what, _ = _split(message)
    for name, pattern in _COMPILED:
        if pattern.search(what):
            return name
    generic = _NUMBER.sub("N", _QUOTED.sub("…", _PATH.sub("<file>", what))).split(": ")[0].strip()
    return generic if len(generic) <= _MAX_GENERIC else generic[:_MAX_GENERIC - 1] + "…"


def action(message: str) -> str:
    """What was done about it: the text after the message's last ``"; "`` (``image skipped``,
    ``annotation skipped``, ``age set to missing``, ``clipped``...), or ``"not said"``.

    >>> action("absurd age 412 (allowed 0–120 years); age set to missing"), action("odd")
    ('age set to missing', 'not said')
    """
    return _split(message)[1] or "not said"
