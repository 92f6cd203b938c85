"""Golden values from published files (provenance: tests/fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cxrxai.data.masks import decode_rle
from cxrxai.metrics import geometry
from cxrxai.metrics.fairness import underdiagnosis
from cxrxai.metrics.localization import iou, otsu_mask, pointing_game

FIX = Path(__file__).parents[1] / "fixtures"
CHEX = FIX / "chexlocalize"


@pytest.fixture(scope="module")
def chex():
    maps = dict(np.load(CHEX / "maps.npz"))
    meta = json.loads((CHEX / "maps.json").read_text())
    seg_pred = json.loads((CHEX / "gradcam_segmentations_val_sample.json").read_text())
    seg_gt = json.loads((CHEX / "gt_segmentations_val.json").read_text())
    ann = json.loads((CHEX / "gt_annotations_val.json").read_text())
    return maps, meta, seg_pred, seg_gt, ann


def _decode(rle: dict) -> np.ndarray:
    h, w = rle["size"]
    return decode_rle(rle["counts"], h, w)


def _size(meta, key):
    w, h = meta[key]["cxr_dims_wh"]
    return h, w


def test_otsu_pipeline_reproduces_the_authors_segmentations(chex):
    maps, meta, seg_pred, _, _ = chex
    exact, off = 0, {}
    for key, m in maps.items():
        cxr, task = key.split("|")
        ours = otsu_mask(m, _size(meta, key))
        theirs = _decode(seg_pred[cxr][task])
        diff = int((ours != theirs).sum())
        if diff == 0:
            exact += 1
        else:
            off[key] = diff
    assert exact == 19, off
    assert off == {"patient64541_study1_view1_frontal|Pneumothorax": 1}


@pytest.mark.parametrize("cxr,task,expected_iou,expected_hit", [
    ("patient64541_study1_view1_frontal", "Cardiomegaly", 0.36621, 1.0),
    ("patient64541_study1_view1_frontal", "Enlarged Cardiomediastinum", 0.46235, 1.0),
    ("patient64541_study1_view1_frontal", "Airspace Opacity", 0.0, 0.0),
    ("patient64542_study1_view1_frontal", "Support Devices", 0.03329, 0.0),
])
def test_iou_and_hit_as_chexlocalize(chex, cxr, task, expected_iou, expected_hit):
    maps, meta, _, seg_gt, _ = chex
    key = f"{cxr}|{task}"
    gt = _decode(seg_gt[cxr][task])
    assert iou(otsu_mask(maps[key], gt.shape), gt) == pytest.approx(expected_iou, abs=5e-6)
    assert pointing_game(maps[key], gt) == expected_hit


def test_negative_labels_score_nan_on_the_true_positive_slice(chex):
    maps, meta, _, seg_gt, _ = chex
    cxr = "patient64542_study1_view1_frontal"
    gt = _decode(seg_gt[cxr]["Cardiomegaly"])
    assert not gt.any()
    assert np.isnan(iou(otsu_mask(maps[f"{cxr}|Cardiomegaly"], gt.shape), gt))
    assert np.isnan(pointing_game(maps[f"{cxr}|Cardiomegaly"], gt))
    assert iou(otsu_mask(maps[f"{cxr}|Cardiomegaly"], gt.shape), gt, convention="full") == 0.0


@pytest.mark.parametrize("cxr,task,expected", [
    ("patient64541_study1_view1_frontal", "Cardiomegaly", (1, 0.13216, 1.2218, 0.287)),
    ("patient64541_study1_view1_frontal", "Airspace Opacity", (1, 0.02485, 1.3388, 0.257)),
    ("patient64541_study1_view1_frontal", "Enlarged Cardiomediastinum", (2, 0.14666, 1.0896, 0.3584)),
    ("patient64542_study1_view1_frontal", "Support Devices", (1, 0.01159, 2.3353, 0.9246)),
])
def test_geometric_features_as_chexlocalize(chex, cxr, task, expected):
    """At the published values' printed precision (half a unit of their last digit); the
    instance count is CheXlocalize's (its polygons) and, independently, our own count of
    8-connected components of the mask, which agree on these masks."""
    _, _, _, seg_gt, ann = chex
    mask = _decode(seg_gt[cxr][task])
    f = geometry.features(mask, instances=len(ann[cxr][task]))
    assert f["instances"] == expected[0] == len(ann[cxr][task])
    assert geometry.features(mask)["instances"] == expected[0]  # counted by the code, not passed in
    for name, value in zip(("size", "elongation", "irrectangularity"), expected[1:]):
        decimals = len(str(value).split(".")[1])
        assert f[name] == pytest.approx(value, abs=0.5 * 10 ** -decimals), name


def _underdiagnosis_table() -> pd.DataFrame:
    xrv = pytest.importorskip("torchxrayvision")
    meta = pd.read_csv(Path(xrv.__file__).parent / "data" / "Data_Entry_2017_v2020.csv.gz",
                       usecols=["Image Index", "Patient Age", "Patient Gender"])
    truth = pd.read_csv(FIX / "underdiagnosis_nih" / "True.csv.gz")
    preds = pd.read_csv(FIX / "underdiagnosis_nih" / "preds.csv.gz")
    thr = pd.read_csv(FIX / "underdiagnosis_nih" / "Threshold.csv").set_index("label")["bestthr"]
    df = truth[["path", "No Finding"]].merge(preds[["path", "prob_No Finding"]], on="path")
    df = df.merge(meta, left_on="path", right_on="Image Index", how="left")
    from cxrxai.labels import age_bin

    return pd.DataFrame({
        "image_id": df["path"], "label": "No Finding", "ground_truth": df["No Finding"].astype(int),
        "prob": df["prob_No Finding"], "predicted": (df["prob_No Finding"] >= thr["No Finding"]).astype(int),
        "sex": df["Patient Gender"], "age_bin": df["Patient Age"].map(age_bin),
    })


def test_no_finding_fpr_fnr_by_sex_reproduce_the_published_file():
    table = _underdiagnosis_table()
    assert len(table) == 6373 and table["sex"].notna().all()
    ours = underdiagnosis(table, "sex").set_index("sex")
    published = pd.read_csv(FIX / "underdiagnosis_nih" / "FPRFNR_NF_sex.csv")
    for s in ("M", "F"):
        assert ours.loc[s, "n_NNF"] == published[f"#NNF_{s}"].iloc[0]
        assert ours.loc[s, "n_PNF"] == published[f"#PNF_{s}"].iloc[0]
        assert ours.loc[s, "fpr"] == published[f"FPR_{s}"].iloc[0]
        assert ours.loc[s, "fnr"] == published[f"FNR_{s}"].iloc[0]


def test_no_finding_by_age_with_the_2020_metadata():
    """The age files were made with the 2017 ages; the 2020 revision moves some images between
    bins, so per-bin counts shift while the totals, and the unchanged 80+ bin, agree exactly."""
    ours = underdiagnosis(_underdiagnosis_table(), "age_bin").set_index("age_bin")
    pub = pd.read_csv(FIX / "underdiagnosis_nih" / "FPRFNR_NF_age.csv").iloc[0]
    bins = {"0-20": "0-20", "20-40": "20-40", "40-60": "40-60", "60-80": "60-80", "80+": "80-"}
    assert ours["n_NNF"].sum() == sum(pub[f"#NNF_{c}"] for c in bins.values()) == 2865
    assert ours["n_PNF"].sum() == sum(pub[f"#PNF_{c}"] for c in bins.values()) == 3508
    assert ours.loc["80+", ["n_NNF", "n_PNF", "fpr", "fnr"]].tolist() == [37, 21, 0.622, 0.095]
    assert ours.loc["0-20", ["n_NNF", "n_PNF", "fpr", "fnr"]].tolist() == [149, 226, 0.423, 0.062]
    for ours_bin, col in bins.items():
        assert ours.loc[ours_bin, "fpr"] == pytest.approx(pub[f"FPR_{col}"], abs=0.02)
        assert ours.loc[ours_bin, "fnr"] == pytest.approx(pub[f"FNR_{col}"], abs=0.02)


def test_auroc_and_auprc_per_label_reproduce_the_published_testeval():
    """TestEval.csv (Underdiagnosis, NIH results11): AUROC and AUPRC of each of the 15 labels on
    the 6,373 test images, printed to 16 digits; ours (AUROC from mid-ranks, AP as sklearn's
    average precision, which their code calls) agree to 1e-12."""
    from sklearn.metrics import average_precision_score

    from cxrxai.metrics.classification import auroc

    truth = pd.read_csv(FIX / "underdiagnosis_nih" / "True.csv.gz")
    preds = pd.read_csv(FIX / "underdiagnosis_nih" / "preds.csv.gz")
    published = pd.read_csv(FIX / "underdiagnosis_nih" / "TestEval.csv")
    df = truth.merge(preds, on="path", validate="one_to_one")
    assert len(df) == 6373 and len(published) == 15
    for r in published.itertuples():
        y, s = df[r.label].to_numpy(int), df[f"prob_{r.label}"].to_numpy(float)
        assert auroc(y, s) == pytest.approx(r.auc, abs=1e-12), r.label
        assert average_precision_score(y, s) == pytest.approx(r.auprc, abs=1e-12), r.label


def test_no_finding_by_sex_and_age_against_the_published_intersection():
    """FPFN_AgeSex.csv with Num_NNF_AgeSex / Num_PNF_AgeSex (made with the 2017 ages): the 80+
    cells, whose images kept their bin in the 2020 metadata, agree exactly; each sex's cells add
    up to the published by-sex counts; other cells move by at most 20 images between
    neighbouring bins."""
    ours = underdiagnosis(_underdiagnosis_table(), ["sex", "age_bin"]).set_index(["sex", "age_bin"])
    rates = pd.read_csv(FIX / "underdiagnosis_nih" / "FPFN_AgeSex.csv").set_index("SexAge")
    nnf = pd.read_csv(FIX / "underdiagnosis_nih" / "Num_NNF_AgeSex.csv").set_index("Age")
    pnf = pd.read_csv(FIX / "underdiagnosis_nih" / "Num_PNF_AgeSex.csv").set_index("Age")
    bins = {"0-20": "0-20", "20-40": "20-40", "40-60": "40-60", "60-80": "60-80", "80+": "80-"}
    by_sex = pd.read_csv(FIX / "underdiagnosis_nih" / "FPRFNR_NF_sex.csv").iloc[0]
    for sex in ("M", "F"):
        assert ours.loc[sex, "n_NNF"].sum() == nnf[sex].sum() == by_sex[f"#NNF_{sex}"]
        assert ours.loc[sex, "n_PNF"].sum() == pnf[sex].sum() == by_sex[f"#PNF_{sex}"]
        for ours_bin, col in bins.items():
            row = ours.loc[(sex, ours_bin)]
            exact = ours_bin == "80+"
            tol = 0 if exact else 20  # the largest shift is 15 images (M 20-40 NNF)
            assert abs(row["n_NNF"] - nnf.at[col, sex]) <= tol and abs(row["n_PNF"] - pnf.at[col, sex]) <= tol, (sex, col)
            if exact:
                assert (row["fpr"], row["fnr"]) == (rates.at[col, f"FPR_{sex}"], rates.at[col, f"FNR_{sex}"]), (sex, col)


def test_published_tuned_thresholds_lie_on_our_sweep_and_tune_on_the_sample(chex):
    """CheXlocalize's tuning_results.csv (thresholds tuned on the full validation set, 234 CXRs)
    cannot be recomputed from the two sample images, but its convention can be checked: every
    task is there and every tuned value lies on the grid our ``tune_threshold`` sweeps
    (``np.arange(0.2, 0.8, 0.1)`` in ``tune_heatmap_threshold.py``). On the sample itself the
    tuner picks, for Cardiomegaly, the grid value whose mIoU is highest, by hand from its scores."""
    from cxrxai.metrics.localization import SWEEP_THRESHOLDS, tune_threshold

    published = pd.read_csv(CHEX / "tuning_results.csv")
    assert sorted(published.task) == sorted(["Airspace Opacity", "Atelectasis", "Cardiomegaly", "Consolidation", "Edema",
                                             "Enlarged Cardiomediastinum", "Lung Lesion", "Pleural Effusion",
                                             "Pneumothorax", "Support Devices"])
    assert set(np.round(published.threshold, 1)) <= set(np.round(SWEEP_THRESHOLDS, 1))
    maps, meta, _, seg_gt, _ = chex
    key = "patient64541_study1_view1_frontal|Cardiomegaly"
    gt = _decode(seg_gt["patient64541_study1_view1_frontal"]["Cardiomegaly"])
    best, scores = tune_threshold([maps[key]], [gt], size=gt.shape)
    assert list(scores) == [float(t) for t in SWEEP_THRESHOLDS]
    assert best == max(scores, key=lambda t: (scores[t], -t)) and 0 < scores[best] <= 1


def test_probability_cutoffs_follow_chexlocalize_and_tune_on_the_sample(chex):
    """probability_tuning_results.csv (full validation set; not recomputable from two films):
    its cutoff grid is ours and every task is tuned. On the sample's 20 maps, by hand: at cutoff 0
    nothing is gated (mIoU = mean full-convention IoU of the Otsu segmentations); at a cutoff above
    every probability each positive scores 0 and each negative is skipped, so mIoU = 0."""
    from cxrxai.metrics.localization import PROBABILITY_CUTOFFS, tune_probability_cutoff

    published = pd.read_csv(CHEX / "probability_tuning_results.csv")
    assert sorted(published.prob_threshold.round(1).unique()) == list(PROBABILITY_CUTOFFS)
    assert published.task.nunique() == 10 and published.mIoU.between(0, 1).all()
    maps, meta, _, seg_gt, _ = chex
    segs, truths, probs = [], [], []
    for key, m in maps.items():
        cxr, task = key.split("|")
        truths.append(_decode(seg_gt[cxr][task]))
        segs.append(otsu_mask(m, truths[-1].shape))
        probs.append(meta[key]["prob"])
    ungated = [iou(s, g, convention="full") for s, g in zip(segs, truths)]
    top = max(probs) + 0.05
    best, scores = tune_probability_cutoff(segs, truths, probs, cutoffs=(0.0, top))
    assert scores[0.0] == pytest.approx(np.nanmean(ungated), abs=1e-12)
    assert scores[top] == 0.0 and best == (0.0 if scores[0.0] > 0 else top)
