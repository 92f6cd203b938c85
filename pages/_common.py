"""Page helpers, one import for every page (``from pages import _common as ui``), split by concern:

* :mod:`pages._shell` — page config, password gate, sidebar, navigation, every page's opening;
* :mod:`pages._cache` — cached reads of the store, reports, models and the live worker;
* :mod:`pages._widgets` — cross-page selections, pickers generated from the registries, charts, downloads;
* :mod:`pages._state` — widget values that survive navigation and live in the URL.

The library (``cxrxai``) never imports Streamlit; pages never hold metric code.
"""

from pages._cache import *  # noqa: F403
from pages._cache import __all__ as _cache_all
from pages._shell import *  # noqa: F403
from pages._shell import __all__ as _shell_all
from pages._state import *  # noqa: F403
from pages._state import __all__ as _state_all
from pages._widgets import *  # noqa: F403
from pages._widgets import __all__ as _widgets_all

__all__ = [*_shell_all, *_cache_all, *_widgets_all, *_state_all]
