"""Areas of the perturbation curves of :mod:`cxrxai.metrics.fidelity` (which re-exports these; the
thesis's AUDC, AUIC and AUDCdiff, conventions there).
"""

from __future__ import annotations

import numpy as np

__all__ = ["audc_diff", "curve_area", "normalized_audc_diff"]


def curve_area(x, y) -> float:
    """Trapezoidal area under a curve on x ∈ [0, 1] (AUDC of a deletion curve, AUIC of an insertion one).

    Parameters
    ----------
    x, y : array_like
        The curve, e.g. from :func:`perturbation_curve`.

    Returns
    -------
    area : float

    Notes
    -----
    A = Σ_k (x_k − x_{k−1})(y_k + y_{k−1}) / 2 (``np.trapezoid``); the thesis normalises x to [0, 1] first.
    A lower AUDC and a higher AUIC mean a better explanation (Petsiuk et al.). x is not checked: another
    range gives the area over that range.

    References
    ----------
    .. [1] Petsiuk V., Das A., Saenko K. (2018) RISE: Randomized input sampling for explanation of
           black-box models. BMVC. arXiv:1806.07421

    Examples
    --------
    >>> curve_area([0.0, 0.5, 1.0], [1.0, 0.5, 0.0])
    0.5
    """
    return float(np.trapezoid(np.asarray(y, float), np.asarray(x, float)))


def audc_diff(ordered_y, random_y, x) -> float:
    """AUDC(random) − AUDC(ordered); positive means the ranking beats chance.

    Parameters
    ----------
    ordered_y, random_y : array_like
        Deletion-curve scores in attribution order and in random order (:func:`perturbation_curve`).
    x : array_like
        Their common x (0 … 1).

    Returns
    -------
    diff : float

    Notes
    -----
    AUDCdiff = AUDC(random) − AUDC(attribution order), each by :func:`curve_area`: positive when deleting
    the most important regions first lowers the score faster than chance. The thesis found many negative
    values on chest X-rays. Fills are compared with :func:`normalized_audc_diff`.

    References
    ----------
    .. [1] Bel Bordes G. (2023) Fairness and Explainability in Chest X-ray Image Classifiers. MSc thesis,
           Utrecht University.

    Examples
    --------
    >>> audc_diff([1.0, 0.0, 0.0], [1.0, 0.5, 0.0], [0.0, 0.5, 1.0])  # 0.5 − 0.25
    0.25
    """
    return curve_area(x, random_y) - curve_area(x, ordered_y)


def normalized_audc_diff(diff: float, curve_y, reference_y) -> float:
    """Rescale a fill's AUDCdiff to the reference (black-fill) deletion curve's range.

    Parameters
    ----------
    diff : float
        The fill's AUDCdiff (:func:`audc_diff`), e.g. with the mean image.
    curve_y, reference_y : array_like
        That fill's deletion curve and the black-fill deletion curve of the same image.

    Returns
    -------
    normalized : float
        NaN when ``curve_y`` ends at its starting score.

    Notes
    -----
    normalized = diff · range(reference) / range(curve), range(y) = y_end − y_start (the score of the fully
    filled image minus that of the original). The thesis prints the formula with AUDCdiff(black) on the
    right-hand side, which would make the result independent of the mean-image curve; we read it as this
    rescaling of the fill's own AUDCdiff. The black fill against itself is unchanged.

    References
    ----------
    .. [1] Bel Bordes G. (2023) Fairness and Explainability in Chest X-ray Image Classifiers. MSc thesis,
           Utrecht University.

    Examples
    --------
    >>> normalized_audc_diff(0.125, [1.0, 0.5], [1.0, 0.0])  # ranges −0.5 and −1
    0.25
    >>> normalized_audc_diff(0.125, [1.0, 1.0], [1.0, 0.0])
    nan
    """
    rng, ref = float(curve_y[-1] - curve_y[0]), float(reference_y[-1] - reference_y[0])
    return float(diff * ref / rng) if rng != 0 else float("nan")
