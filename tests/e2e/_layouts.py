"""Small datasets written on disk in each published layout, from phantom cases at native sizes
that differ from image to image, in the formats each dataset ships (PNG 8/16-bit, JPEG, DICOM
MONOCHROME1 and 2). Each builder returns a :class:`Layout`: the CLI arguments of the dataset, the
model's labels, and the ground truth written, at each image's own size, to check numbers against.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from cxrxai.data.masks import bounding_box, encode_rle
from cxrxai.data.phantom import PhantomConfig, sample_cohort
from cxrxai.data.phantom_files import phantom_at, write_radiograph

#: Native sizes (height, width), cycled over the images: square, portrait, landscape, odd.
SIZES = [(160, 128), (128, 176), (200, 200), (143, 117), (176, 150), (120, 160)]
CONFIG = PhantomConfig(size=128, n_images=40, seed=5, min_prevalence=0.35)


@dataclass
class Layout:
    dataset: str
    root: Path
    options: list[str]
    labels: list[str]
    #: (image_id, label) → (height, width, mask) of the reference ground truth as written.
    truth: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)

    def args(self) -> list[str]:
        out = ["--dataset", self.dataset, "--root", str(self.root)]
        for o in self.options:
            out += ["--data-option", o]
        return out


def cases(n: int, findings: tuple[str, ...] | None = None):
    """``n`` phantom specs (those with one of ``findings`` first, then others), each with a size."""
    specs = sample_cohort(CONFIG)
    if findings:
        specs = sorted(specs, key=lambda s: not set(s.findings) & set(findings))
    return [(s, SIZES[k % len(SIZES)]) for k, s in enumerate(specs[:n])]


def box_of(mask: np.ndarray) -> tuple[int, int, int, int]:
    return bounding_box(mask)


def nih(root: Path, entry_rows: pd.DataFrame) -> Layout:
    """NIH ChestX-ray14: ``images/`` PNGs, real Data_Entry rows (ids, patients, sex, age, view)
    with the phantom's findings, and a BBox_List_2017.csv of the phantom's lesions."""
    lay = Layout("nih", root, [], [])
    entry, boxes = [], []
    for k, ((spec, (h, w)), (_, row)) in enumerate(zip(cases(len(entry_rows)), entry_rows.iterrows())):
        pf = phantom_at(spec, CONFIG, h, w)
        image_id = row["Image Index"]
        write_radiograph(pf.image, root / "images" / image_id, fmt="png16" if k % 2 else "png8")
        entry.append({**row.to_dict(), "Finding Labels": "|".join(spec.findings) or "No Finding"})
        lay.sizes[image_id] = (h, w)
        for label in spec.findings:
            if label in pf.masks:
                x, y, bw, bh = box_of(pf.mask(label))
                boxes.append({"Image Index": image_id, "Finding Label": "Infiltrate" if label == "Infiltration" else label,
                              "Bbox [x": x, "y": y, "w": bw, "h]": bh})
                lay.truth[(image_id, label)] = (h, w, _box_mask(x, y, bw, bh, h, w))
    pd.DataFrame(entry).to_csv(root / "Data_Entry_2017_v2020.csv", index=False)
    pd.DataFrame(boxes).to_csv(root / "BBox_List_2017.csv", index=False)
    return lay


def _box_mask(x, y, w, h, H, W) -> np.ndarray:
    m = np.zeros((H, W), bool)
    m[y:y + h, x:x + w] = True
    return m


CHEXPERT_OF = {"Atelectasis": "Atelectasis", "Cardiomegaly": "Cardiomegaly", "Effusion": "Pleural Effusion",
               "Pneumothorax": "Pneumothorax", "Pneumonia": "Consolidation", "Mass": "Lung Lesion",
               "Nodule": "Lung Lesion", "Infiltration": "Lung Opacity"}


def chexpert(root: Path, n: int = 8) -> Layout:
    """CheXpert ``valid.csv`` + JPEGs under ``CheXpert-v1.0/valid/…``, with CheXlocalize's
    ``gt_annotations_val.json`` (polygons at ``img_size``), ``gt_segmentations_val.json`` (RLE) and
    a human benchmark ``hb_annotations_val.json`` (the reference eroded by 3 px)."""
    from cxrxai.data.adapters.chexpert import CHEXPERT_LABELS, TO_CHEXLOCALIZE

    lay = Layout("chexpert", root, [f"chexlocalize={root / 'chexlocalize'}"], list(CHEXPERT_LABELS))
    rows, gt, seg, hb = [], {}, {}, {}
    for k, (spec, (h, w)) in enumerate(cases(n, tuple(CHEXPERT_OF))):
        pf = phantom_at(spec, CONFIG, h, w)
        rel = f"valid/patient{70000 + k}/study1/view1_frontal.jpg"
        write_radiograph(pf.image, root / "CheXpert-v1.0" / rel, fmt="jpeg")
        cxr = f"patient{70000 + k}_study1_view1_frontal"
        labels = {CHEXPERT_OF[f] for f in spec.findings if f in CHEXPERT_OF}
        rows.append({"Path": f"CheXpert-v1.0/{rel}", "Sex": "Female" if spec.sex == "F" else "Male", "Age": spec.age,
                     "Frontal/Lateral": "Frontal", "AP/PA": spec.view,
                     **{lab: float(lab in labels) if lab != "No Finding" else float(not labels) for lab in CHEXPERT_LABELS}})
        lay.sizes[cxr] = (h, w)
        gt[cxr], hb[cxr], seg[cxr] = {"img_size": [h, w]}, {"img_size": [h, w]}, {}
        for lab in sorted(labels):
            mask = np.zeros((h, w), bool)
            for f, c in CHEXPERT_OF.items():
                if c == lab:
                    mask |= pf.mask(f)
            if not mask.any():
                continue
            task = TO_CHEXLOCALIZE.get(lab, lab)
            gt[cxr][task] = _polygons(mask)
            filled = _fill(gt[cxr][task], h, w)
            lay.truth[(cxr, lab)] = (h, w, filled)
            seg[cxr][task] = {"size": [h, w], "counts": encode_rle(filled)}
            eroded = cv2.erode(filled.astype(np.uint8), np.ones((7, 7), np.uint8)).astype(bool)
            if eroded.any():
                hb[cxr][task] = _polygons(eroded)
    pd.DataFrame(rows).to_csv(root / "valid.csv", index=False)
    loc = root / "chexlocalize"
    loc.mkdir()
    (loc / "gt_annotations_val.json").write_text(json.dumps(gt))
    (loc / "gt_segmentations_val.json").write_text(json.dumps(seg))
    (loc / "hb_annotations_val.json").write_text(json.dumps(hb))
    return lay


def _polygons(mask: np.ndarray) -> list:
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    return [[[int(x), int(y)] for x, y in c[:, 0]] for c in contours if len(c) >= 3]


def _fill(polygons: list, h: int, w: int) -> np.ndarray:
    from cxrxai.data.adapters.chexpert import polygon_mask

    out = np.zeros((h, w), bool)
    for p in polygons:
        out |= polygon_mask([p], h, w)
    return out


def siim_rle(mask: np.ndarray) -> str:
    """Kaggle SIIM's relative RLE (column-major; offsets from the end of the previous run)."""
    flat = np.concatenate([[0], mask.T.ravel().astype(np.int8), [0]])
    starts = np.flatnonzero(np.diff(flat) == 1)
    ends = np.flatnonzero(np.diff(flat) == -1)
    out, prev = [], 0
    for s, e in zip(starts, ends):
        out += [int(s - prev), int(e - s)]
        prev = e
    return " ".join(map(str, out))


def siim(root: Path, n: int = 8) -> Layout:
    """SIIM-ACR: ``train-rle.csv`` and DICOMs (MONOCHROME1 and 2, each its own size)."""
    lay = Layout("siim", root, ["read_headers=true"], ["Pneumothorax"])
    rows = []
    for k, (spec, (h, w)) in enumerate(cases(n, ("Pneumothorax",))):
        pf = phantom_at(spec, CONFIG, h, w)
        image_id = f"1.2.276.0.7230010.3.1.4.{k}"
        write_radiograph(pf.image, root / "dicom-images-train" / f"study{k}" / f"{image_id}.dcm",
                         fmt="dicom-mono1" if k % 2 else "dicom-mono2", patient_sex=spec.sex, patient_age=spec.age)
        lay.sizes[image_id] = (h, w)
        masks = pf.masks.get("Pneumothorax", [])
        for m in masks:
            rows.append({"ImageId": image_id, " EncodedPixels": " " + siim_rle(m)})
        if masks:
            lay.truth[(image_id, "Pneumothorax")] = (h, w, pf.mask("Pneumothorax"))
        else:
            rows.append({"ImageId": image_id, " EncodedPixels": " -1"})
    pd.DataFrame(rows).to_csv(root / "train-rle.csv", index=False)
    return lay


def rsna(root: Path, n: int = 8) -> Layout:
    """RSNA Pneumonia: ``stage_2_train_labels.csv`` boxes and ``stage_2_train_images/*.dcm``."""
    lay = Layout("rsna", root, [], ["Pneumonia"])
    rows = []
    for k, (spec, (h, w)) in enumerate(cases(n, ("Pneumonia",))):
        pf = phantom_at(spec, CONFIG, h, w)
        pid = f"0004cfab-14fd-4e49-80ba-63a80b6bdd{k:02d}"
        write_radiograph(pf.image, root / "stage_2_train_images" / f"{pid}.dcm", fmt="dicom-mono2",
                         patient_sex=spec.sex, patient_age=spec.age)
        lay.sizes[pid] = (h, w)
        if "Pneumonia" in pf.masks:
            x, y, bw, bh = box_of(pf.mask("Pneumonia"))
            rows.append({"patientId": pid, "x": x, "y": y, "width": bw, "height": bh, "Target": 1})
            lay.truth[(pid, "Pneumonia")] = (h, w, _box_mask(x, y, bw, bh, h, w))
        else:
            rows.append({"patientId": pid, "x": None, "y": None, "width": None, "height": None, "Target": 0})
    pd.DataFrame(rows).to_csv(root / "stage_2_train_labels.csv", index=False)
    return lay


VINDR_OF = {"Cardiomegaly": "Cardiomegaly", "Effusion": "Pleural effusion", "Mass": "Nodule/Mass",
            "Nodule": "Nodule/Mass", "Pneumothorax": "Pneumothorax", "Atelectasis": "Atelectasis"}


def vindr(root: Path, n: int = 8) -> Layout:
    """VinDr-CXR: ``annotations_train.csv`` (two radiologists, R8 and R9, per image) and
    ``train/<image_id>.dicom``; R9's boxes are R8's shifted 2 px right."""
    lay = Layout("vindr", root, [], [])
    rows = []
    for k, (spec, (h, w)) in enumerate(cases(n, tuple(VINDR_OF))):
        pf = phantom_at(spec, CONFIG, h, w)
        image_id = f"{k:04d}e7a2f8b3c1d9"
        write_radiograph(pf.image, root / "train" / f"{image_id}.dicom", fmt="dicom-mono1" if k % 2 else "dicom-mono2")
        lay.sizes[image_id] = (h, w)
        found = [f for f in spec.findings if f in VINDR_OF and f in pf.masks]
        for rad, shift in (("R8", 0), ("R9", 2)):
            if not found:
                rows.append({"image_id": image_id, "class_name": "No finding", "class_id": 14, "rad_id": rad,
                             "x_min": None, "y_min": None, "x_max": None, "y_max": None})
            for f in found:
                x, y, bw, bh = box_of(pf.mask(f))
                x1 = min(x + bw + shift, w)
                rows.append({"image_id": image_id, "class_name": VINDR_OF[f], "class_id": 0, "rad_id": rad,
                             "x_min": x + shift, "y_min": y, "x_max": x1, "y_max": y + bh})
                # the reference reader is the union of both radiologists' boxes of the finding
                _, _, union = lay.truth.get((image_id, VINDR_OF[f]), (h, w, np.zeros((h, w), bool)))
                lay.truth[(image_id, VINDR_OF[f])] = (h, w, union | _box_mask(x + shift, y, x1 - x - shift, bh, h, w))
    df = pd.DataFrame(rows)
    df.to_csv(root / "annotations_train.csv", index=False)
    lay.labels = sorted(set(df.class_name))
    return lay


def folder(root: Path, n: int = 8) -> Layout:
    """Any folder + CSV: ``path``, 0/1 label columns, sex, age, split; a boxes CSV."""
    labels = ["Effusion", "Cardiomegaly", "Nodule"]
    lay = Layout("folder", root, ["csv=" + str(root / "cases.csv"), "labels=" + ",".join(labels),
                                  "boxes_csv=" + str(root / "boxes.csv")], labels)
    rows, boxes = [], []
    for k, (spec, (h, w)) in enumerate(cases(n, tuple(labels))):
        pf = phantom_at(spec, CONFIG, h, w)
        rel = f"films/{k:03d}." + ("jpg" if k % 3 == 0 else "png")
        write_radiograph(pf.image, root / rel, fmt="jpeg" if k % 3 == 0 else ("png16" if k % 3 == 1 else "png8"))
        rows.append({"path": rel, "patient_id": spec.patient_id, "sex": spec.sex, "age": spec.age, "view": spec.view,
                     "split": ("train", "val", "test")[k % 3], **{lab: int(lab in spec.findings) for lab in labels}})
        lay.sizes[rel] = (h, w)
        for lab in labels:
            if lab in pf.masks:
                x, y, bw, bh = box_of(pf.mask(lab))
                boxes.append({"path": rel, "label": lab, "x": x, "y": y, "w": bw, "h": bh})
                lay.truth[(rel, lab)] = (h, w, _box_mask(x, y, bw, bh, h, w))
    pd.DataFrame(rows).to_csv(root / "cases.csv", index=False)
    pd.DataFrame(boxes).to_csv(root / "boxes.csv", index=False)
    return lay


def mimic(root: Path, n: int = 8) -> Layout:
    """MIMIC-CXR-JPG: ``files/pNN/p<subject>/s<study>/<dicom_id>.jpg``, the gzipped metadata,
    CheXpert-labeler and split CSVs (one study per film, one ``-1.0`` uncertain label), and
    MIMIC-IV's ``hosp/patients.csv.gz`` for sex and age (``mimic_iv=``)."""
    from cxrxai.data.adapters.chexpert import CHEXPERT_LABELS

    lay = Layout("mimic", root, [f"mimic_iv={root / 'mimiciv'}"], list(CHEXPERT_LABELS))
    meta, labels, split, patients = [], [], [], {}
    for k, (spec, (h, w)) in enumerate(cases(n, tuple(CHEXPERT_OF))):
        pf = phantom_at(spec, CONFIG, h, w)
        subject = patients.setdefault(spec.patient_id, (10_000_000 + 17 * len(patients), spec))[0]
        study, dicom_id = 50_000_000 + k, f"{k:08x}-5b8c1d2e-7f3a9c10-4e6d2b8a-{k:08x}"
        film = root / f"files/p{str(subject)[:2]}/p{subject}/s{study}/{dicom_id}.jpg"
        write_radiograph(pf.image, film, fmt="jpeg")
        meta.append({"dicom_id": dicom_id, "subject_id": subject, "study_id": study,
                     "PerformedProcedureStepDescription": "CHEST (PA AND LAT)", "ViewPosition": spec.view,
                     "Rows": h, "Columns": w, "StudyDate": 21800506, "StudyTime": 213014.531,
                     "ProcedureCodeSequence_CodeMeaning": "CHEST (PA AND LAT)",
                     "ViewCodeSequence_CodeMeaning": "postero-anterior",
                     "PatientOrientationCodeSequence_CodeMeaning": "Erect"})
        found = {CHEXPERT_OF[f] for f in spec.findings if f in CHEXPERT_OF}
        row = {lab: (1.0 if lab in found else None) for lab in CHEXPERT_LABELS}
        row["No Finding"] = None if found else 1.0
        if k == 1 and "Edema" not in found:
            row["Edema"] = -1.0  # uncertain: a negative under the default policy (zeros)
        labels.append({"subject_id": subject, "study_id": study, **row})
        split.append({"dicom_id": dicom_id, "study_id": study, "subject_id": subject,
                      "split": ("train", "validate", "test")[k % 3]})
        lay.sizes[dicom_id] = (h, w)
    pd.DataFrame(meta).to_csv(root / "mimic-cxr-2.0.0-metadata.csv.gz", index=False)
    pd.DataFrame(labels).to_csv(root / "mimic-cxr-2.0.0-chexpert.csv.gz", index=False)
    pd.DataFrame(split).to_csv(root / "mimic-cxr-2.0.0-split.csv.gz", index=False)
    (root / "mimiciv" / "hosp").mkdir(parents=True)
    mimic_iv = pd.DataFrame([{"subject_id": s, "gender": spec.sex, "anchor_age": spec.age,
                              "anchor_year": 2180, "anchor_year_group": "2014 - 2016", "dod": None}
                             for s, spec in patients.values()])
    mimic_iv.to_csv(root / "mimiciv" / "hosp" / "patients.csv.gz", index=False)
    return lay


PADCHEST_OF = {"Effusion": "pleural effusion", "Cardiomegaly": "cardiomegaly", "Nodule": "nodule",
               "Mass": "mass", "Pneumothorax": "pneumothorax", "Atelectasis": "atelectasis",
               "Pneumonia": "pneumonia", "Infiltration": "infiltrates"}


def padchest(root: Path, n: int = 8) -> Layout:
    """PadChest: 16-bit greyscale PNGs in numbered folders (``<ImageDir>/<ImageID>``) and the gzipped
    ``PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv`` with its label lists as PadChest writes
    them (its names, a stray leading space, ``'normal'`` for a film without findings)."""
    from cxrxai.data.adapters.padchest import PADCHEST_CSV

    lay = Layout("padchest", root, [], [])
    rows = []
    for k, (spec, (h, w)) in enumerate(cases(n, tuple(PADCHEST_OF))):
        pf = phantom_at(spec, CONFIG, h, w)
        image_id, folder = f"2168401113669640{k:04d}_00-0{k:02d}-1{k:02d}.png", k % 3
        # PadChest ships 12-bit data in 16-bit PNGs; these films use the full 16-bit range
        write_radiograph(pf.image, root / str(folder) / image_id, fmt="png16")
        names = [PADCHEST_OF[f] for f in spec.findings if f in PADCHEST_OF] or ["normal"]
        cell = "[" + ", ".join(("' " if j else "'") + name + "'" for j, name in enumerate(names)) + "]"
        rows.append({"ImageID": image_id, "ImageDir": folder, "StudyDate_DICOM": 20150914,
                     "StudyID": f"st{k}", "PatientID": f"pt{spec.patient_id}",
                     "PatientBirth": 2015 - spec.age,
                     "PatientSex_DICOM": spec.sex, "ViewPosition_DICOM": "POSTEROANTERIOR",
                     "Projection": spec.view, "MethodProjection": "Manual review of DICOM fields",
                     "Pediatric": "No", "Modality_DICOM": "CR", "BitsStored_DICOM": 12, "Rows_DICOM": h,
                     "Columns_DICOM": w, "Report": "sin hallazg", "MethodLabel": "Physician", "Labels": cell,
                     "Localizations": "[]"})
        lay.sizes[image_id] = (h, w)
    df = pd.DataFrame(rows)
    df.to_csv(root / (PADCHEST_CSV + ".gz"))  # with the unnamed index column the published file has
    lay.labels = sorted({name for cell in df.Labels for name in _names(cell)})
    return lay


def _names(cell: str) -> list[str]:
    return [part.strip().strip("'").strip() for part in cell.strip("[]").split(",")]
