"""Page state that survives navigation and lives in the URL.

Streamlit drops a widget's value when its page is left. A widget whose key went through
:func:`kept` has its value copied to a plain session dict on every run of any page
(:func:`keep_all`, called by the shell before a page draws) and restored when its page is shown
again; another page sets it with :func:`set_kept` (a chart click setting the explorer's
filters). :func:`from_url` seeds such keys once per session from the query string and
:func:`to_url` writes the view back, so a URL shares the view.
"""

from __future__ import annotations

import streamlit as st

__all__ = ["URL_PAIRS", "current", "from_url", "keep_all", "kept", "pairs_from_url", "pairs_to_url",
           "set_kept", "to_url"]

#: At most this many (image, finding) pairs go into the URL (one ``pair`` parameter each): a longer
#: query string is refused by servers and proxies; a page says when its selection did not fit.
URL_PAIRS = 400

_SAVED = "_kept"  # {widget key: last value}
_KEYS = "_kept_keys"  # widget keys registered as persistent
_URL_READ = "_url_read"


def kept(key: str, default, *, allowed=None) -> str:
    """Register ``key`` as persistent and make sure the session holds its value (the restored one,
    or ``default`` when none was kept or it is no longer among ``allowed``); create the widget with
    ``key=key`` and no default of its own."""
    st.session_state.setdefault(_KEYS, set()).add(key)
    if key not in st.session_state:
        saved = st.session_state.get(_SAVED, {})
        st.session_state[key] = saved.get(key, default)
    if allowed is not None and not _within(st.session_state[key], allowed):
        st.session_state[key] = default
    return key


def _within(value, allowed) -> bool:
    allowed = list(allowed)
    return all(v in allowed for v in value) if isinstance(value, list) else value in allowed


def current(key: str, default=None):
    """A persistent widget's value before its widget is drawn in this run (drawn or kept)."""
    if key in st.session_state:
        return st.session_state[key]
    return st.session_state.get(_SAVED, {}).get(key, default)


def keep_all() -> None:
    """Copy every persistent widget's current value aside (run before a page draws)."""
    saved = st.session_state.setdefault(_SAVED, {})
    for key in st.session_state.get(_KEYS, set()):
        if key in st.session_state:
            saved[key] = st.session_state[key]


def set_kept(key: str, value) -> None:
    """Set a persistent widget's value from another page (its widget is not drawn in this run)."""
    st.session_state.setdefault(_KEYS, set()).add(key)
    st.session_state.setdefault(_SAVED, {})[key] = value
    st.session_state[key] = value


def from_url(mapping: dict[str, str], *, lists=(), parse=None) -> None:
    """Once per session: query parameters → persistent keys (``{"finding": "f_finding"}``);
    ``lists`` are repeated parameters; ``parse(param, text)`` converts a value (default: as is)."""
    if st.session_state.get(_URL_READ):
        return
    st.session_state[_URL_READ] = True
    for param, key in mapping.items():
        if param not in st.query_params:
            continue
        values = st.query_params.get_all(param)
        value = values if param in lists else values[-1]
        try:
            set_kept(key, parse(param, value) if parse else value)
        except ValueError:
            continue  # a hand-edited URL with a bad value keeps the default


def to_url(values: dict) -> None:
    """Write the view's state to the query string (empty values left out)."""
    clean = {k: ([str(x) for x in v] if isinstance(v, (list, tuple)) else str(v))
             for k, v in values.items() if v not in (None, "", [], ())}
    if {k: st.query_params.get_all(k) for k in st.query_params} != {k: v if isinstance(v, list) else [v]
                                                                  for k, v in clean.items()}:
        st.query_params.from_dict(clean)


def pairs_to_url(pairs) -> list[str] | None:
    """(image_id, finding) pairs as ``pair`` parameters (``ph7-00012|Effusion``: a finding never holds
    "|", the label separator of every dataset's CSV); None for none or more than :data:`URL_PAIRS`."""
    if not pairs or len(pairs) > URL_PAIRS:
        return None
    return [f"{image_id}|{label}" for image_id, label in pairs]


def pairs_from_url(texts: list[str]) -> list[tuple[str, str]]:
    """The pairs of :func:`pairs_to_url`; ValueError for a parameter that is not ``image|finding``."""
    pairs = [tuple(t.rpartition("|")[::2]) for t in texts]
    if not pairs or any(not i or not lab for i, lab in pairs):
        raise ValueError(f"pair parameters must read image_id|finding; got {texts}")
    return pairs
