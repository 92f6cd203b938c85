"""What the explorer sends its film component: the figure without a picture (the browser paints
each film from its data: the server neither blends nor encodes one), and each film's data, in the
single film and in the compare layout (AppTest, the tiny demo store)."""

from __future__ import annotations

import json

import pytest
from test_pages import _app  # tests/app is on sys.path (no __init__.py)

pytestmark = pytest.mark.slow


def _args(at) -> dict:
    (view,) = [e for e in at.get("component_instance") if "cxrxai_film" in e.proto.component_name]
    return json.loads(view.proto.json_args)


@pytest.mark.parametrize("layout,films", [("single", 1), ("compare", 2)])
def test_the_film_figure_is_sent_without_a_picture_and_with_each_films_data(tiny_full_store, layout, films):
    at = _app(tiny_full_store, "pages/explorer.py", layout=layout)
    assert not at.exception, at.exception
    args = _args(at)
    images = [t for t in json.loads(args["figure"])["data"] if t["type"] == "image"]
    assert len(images) == films and not any("source" in t for t in images)
    data = args["payload"]["films"]
    assert len(data) == films and all(f["film"] and f["width"] * f["height"] for f in data)
