"""The two commands a new user runs first, on real published files (``tests/fixtures``):

* CheXpert + CheXlocalize: the two real validation radiographs (2828×2320 and 2021×2022 px) and
  their radiologists' polygons, a torchvision DenseNet-121 ``state_dict`` with CheXpert's 14
  labels → ``precompute`` scores every (image, label) that has a ground-truth mask, each at its
  own size, and the explorer browses the store by CheXpert's labels.
* Underdiagnosis (Seyyed-Kalantari et al.): the published ``preds.csv`` + ``Threshold.csv`` on an
  NIH folder holding only ``Data_Entry_2017_v2020.csv`` and ``BBox_List_2017.csv`` →
  ``report underdiagnosis --option by=sex --option split=all`` prints the published No Finding
  FPR / FNR and counts by sex exactly.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
import torch
import torchvision
from streamlit.testing.v1 import AppTest

from cxrxai.cli import main
from cxrxai.data.adapters.chexpert import CHEXPERT_LABELS, FROM_CHEXLOCALIZE
from cxrxai.data.io import read_image
from cxrxai.data.masks import decode_rle
from cxrxai.present import overlay
from cxrxai.store import open_store

pytestmark = pytest.mark.slow
FIX = Path(__file__).resolve().parents[1] / "fixtures"
APP = Path(__file__).resolve().parents[2] / "app.py"
BIG = "patient64541_study1_view1_frontal"  # 2828 × 2320 px


@pytest.fixture(scope="module")
def chexpert_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("chexpert")
    data = root / "CheXpert-v1.0-small"
    shutil.copytree(FIX / "chexlocalize" / "valid", data / "valid")
    shutil.copy(FIX / "chexlocalize" / "valid.csv", data / "valid.csv")
    loc = root / "CheXlocalize"
    loc.mkdir()
    for name in ("gt_annotations_val.json", "gt_segmentations_val.json"):
        shutil.copy(FIX / "chexlocalize" / name, loc / name)
    torch.manual_seed(0)
    torch.save(torchvision.models.densenet121(num_classes=14).state_dict(), root / "chexpert-densenet121.pt")
    (root / "labels.json").write_text(json.dumps(CHEXPERT_LABELS))
    store = root / "s.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CXRXAI_DATA_CACHE", str(root / "cache"))
        assert main(["precompute", "--dataset", "chexpert", "--root", str(data), "--data-option", f"chexlocalize={loc}",
                     "--model", f"densenet121:{root / 'chexpert-densenet121.pt'}:{root / 'labels.json'}",
                     "--store", str(store), "--split", "all", "--explainers", "gradcam,gradcam++"]) == 0
    return store


def _truth_pairs() -> set[tuple[str, str]]:
    seg = json.loads((FIX / "chexlocalize" / "gt_segmentations_val.json").read_text())
    return {(cxr, FROM_CHEXLOCALIZE.get(task, task)) for cxr, tasks in seg.items() for task, rle in tasks.items()
            if decode_rle(rle["counts"], *rle["size"]).any()}


def test_every_image_label_with_a_mask_is_scored(chexpert_store):
    with open_store(chexpert_store) as s:
        loc = s.table("localization", model_id="chexpert-densenet121", reader="gt")
        images = s.images().set_index("image_id")
    assert (images.at[BIG, "height"], images.at[BIG, "width"]) == (2320, 2828)
    for method in ("gradcam", "gradcam++"):
        scored = loc[(loc.method == method) & loc.gt_positive]
        assert set(zip(scored.image_id, scored.label)) == _truth_pairs()
        # every image × label has a row; negatives are scored against an empty mask
        assert len(loc[loc.method == method]) == 2 * len(CHEXPERT_LABELS) - 2  # No Finding has no map


def test_lesion_geometry_at_each_images_own_size_matches_the_published_values(chexpert_store):
    """Values recomputed from CheXlocalize's files (tests/fixtures/README.md)."""
    with open_store(chexpert_store) as s:
        geo = s.table("geometry", reader="gt", dominant="most_points").set_index(["image_id", "label"])
    expected = {(BIG, "Cardiomegaly"): (1, 0.13216, 1.2218, 0.287), (BIG, "Lung Opacity"): (1, 0.02485, 1.3388, 0.257),
                (BIG, "Enlarged Cardiomediastinum"): (2, 0.14666, 1.0896, 0.3584),
                ("patient64542_study1_view1_frontal", "Support Devices"): (1, 0.01159, 2.3353, 0.9246)}
    for key, (inst, size, elong, irrect) in expected.items():
        row = geo.loc[key]
        assert row["instances"] == inst
        assert row["size"] == pytest.approx(size, abs=5e-6)
        assert row["elongation"] == pytest.approx(elong, abs=5e-5)
        assert row["irrectangularity"] == pytest.approx(irrect, abs=5e-4 if irrect < 0.3 else 5e-5)


def test_explorer_browses_chexpert_labels_and_draws_the_big_film(chexpert_store):
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["store_path"] = str(chexpert_store)
    at.session_state["f_finding"] = "Cardiomegaly"
    at.session_state["sel_case"] = BIG
    at.run()
    at.switch_page("pages/explorer.py").run()
    assert not at.exception, at.exception
    finding = next(s for s in at.selectbox if s.label == "Finding")
    assert list(finding.options) == [lab for lab in CHEXPERT_LABELS if lab != "No Finding"]
    assert BIG in at.subheader[0].value
    captions = [c.value for c in at.caption]
    assert "chexpert-densenet121 · Grad-CAM · stored" in captions, captions
    (component,) = [e for e in at.get("component_instance") if "cxrxai_film" in e.proto.component_name]
    film = json.loads(json.loads(component.proto.json_args)["figure"])  # the film component's figure
    assert film["layout"]["xaxis"]["range"] == [0, 2828] and film["layout"]["yaxis"]["range"] == [2320, 0]
    assert "reference (gt)" in {t.get("name") for t in film["data"]}  # the Cardiomegaly outline is drawn


def test_overlay_of_a_large_film_puts_the_mask_where_it_is():
    """The 2828 px film is drawn at display size; its Cardiomegaly outline lands on the scaled box."""
    film = read_image(FIX / "chexlocalize" / "valid" / "patient64541" / "study1" / "view1_frontal.jpg")
    seg = json.loads((FIX / "chexlocalize" / "gt_segmentations_val.json").read_text())[BIG]["Cardiomegaly"]
    mask = decode_rle(seg["counts"], *seg["size"])
    assert film.shape == mask.shape == (2320, 2828)
    saliency = np.zeros((7, 7), np.float32)
    saliency[4, 3] = 1.0  # a hot spot low in the middle, where the heart is
    f = overlay.display_scale(film.shape)
    outline = overlay.render_case(film, None, masks=[("Cardiomegaly", mask)]).astype(int)
    assert outline.shape == (round(2320 * f), round(2828 * f), 3) and max(outline.shape) == overlay.MAX_DISPLAY_SIDE
    ys, xs = np.nonzero(np.abs(outline[..., 0] - outline[..., 2]) > 20)  # the film is grey: colour is the outline
    my, mx = np.nonzero(mask)
    assert len(xs) > 100
    assert xs.min() >= mx.min() * f - 3 and xs.max() <= mx.max() * f + 3
    assert ys.min() >= my.min() * f - 3 and ys.max() <= my.max() * f + 3
    # the map's hottest display pixel is the centre of cell (4, 3), scaled to the display grid
    rgb = overlay.render_case(film, saliency, alpha=0.5)
    heat = rgb.astype(int)[..., 0] - cv2.resize(film, rgb.shape[1::-1], interpolation=cv2.INTER_AREA).astype(int)
    hy, hx = np.unravel_index(np.argmax(heat), heat.shape)
    assert abs(hy / rgb.shape[0] - 4.5 / 7) < 0.08 and abs(hx / rgb.shape[1] - 3.5 / 7) < 0.08


def _xrv_file(name: str) -> Path:
    import torchxrayvision

    return Path(torchxrayvision.__file__).parent / "data" / name


def test_underdiagnosis_from_imported_predictions_on_an_nih_metadata_folder(tmp_path, capsys):
    root = tmp_path / "NIH"
    root.mkdir()
    for name in ("Data_Entry_2017_v2020.csv", "BBox_List_2017.csv"):
        with gzip.open(_xrv_file(name + ".gz"), "rb") as src, open(root / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
    with gzip.open(FIX / "underdiagnosis_nih" / "preds.csv.gz", "rb") as src, open(tmp_path / "preds.csv", "wb") as dst:
        shutil.copyfileobj(src, dst)
    store = tmp_path / "nih.duckdb"
    assert main(["import-predictions", "--dataset", "nih", "--root", str(root), "--predictions", str(tmp_path / "preds.csv"),
                 "--thresholds", str(FIX / "underdiagnosis_nih" / "Threshold.csv"), "--name", "underdiagnosis",
                 "--store", str(store)]) == 0
    capsys.readouterr()
    published = pd.read_csv(FIX / "underdiagnosis_nih" / "FPRFNR_NF_sex.csv").iloc[0]
    for extra in (["--option", "split=all"], []):  # split=all, and the default when the model has no test split
        assert main(["report", "underdiagnosis", "--store", str(store), "--json", "--option", "by=sex", *extra]) == 0
        rows = {r["sex"]: r for r in json.loads(capsys.readouterr().out)}
        for sex in ("M", "F"):
            assert rows[sex]["n_NNF"] == published[f"#NNF_{sex}"] and rows[sex]["n_PNF"] == published[f"#PNF_{sex}"]
            assert rows[sex]["fpr"] == published[f"FPR_{sex}"] and rows[sex]["fnr"] == published[f"FNR_{sex}"]
    # an explicit split the predictions do not cover says what the model has, and how to get it
    assert main(["report", "underdiagnosis", "--store", str(store), "--option", "split=test"]) != 0
    err = capsys.readouterr().err
    assert "no predictions in split 'test'" in err and "split=all" in err and "train" in err
