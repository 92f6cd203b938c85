"""Exact incremental inference for occlusion on torchvision DenseNets (Krypton-style).

Occluding a window changes the stem's output only near the window, and each 3×3 dense layer
widens the changed region by one cell. So, per occluded copy, the stem, dense block 1, its
transition and dense block 2 are recomputed only on the region that can differ; everything
else is copied from one clean forward pass. Blocks 3–4 (whose regions cover the whole map)
run in full. Following Nakandala et al. (SIGMOD 2019, "Incremental and Approximate Inference
for Faster Occlusion-based Deep CNN Explanations"), in PyTorch operations only:

* every region is a window of one size for all copies in a batch, shifted inward at the
  image border, so each layer is one batched convolution over gathered windows;
* each copy keeps a full feature buffer per block with a one-cell margin; before a 3×3
  convolution the margin is zeroed, which is exactly the layer's zero padding (applied to the
  post-ReLU activation); the max-pool's −∞ padding equals 0 there because its input is ≥ 0;
* the result equals full re-inference up to floating-point summation order (tested against
  Captum at 1e-4 of the largest attribution).

On a 2-core CPU this recomputes about 10 % of block 1 and 60–75 % of block 2 for a 32-px
window at 224–256 px; it pays less on GPUs, where batching alone saturates the device
(Krypton reports the same), so the engine is chosen on CPU only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

from ._common import runs_stock_code

__all__ = ["IncrementalDenseNet", "supports"]


def supports(module: torch.nn.Module) -> bool:
    """Whether ``module`` is a torchvision DenseNet that runs torchvision's own forward (the tail
    here re-derives its head) with the layer geometry assumed here."""
    if not isinstance(module, torchvision.models.DenseNet) \
            or not runs_stock_code(module, torchvision.models.DenseNet, "forward"):
        return False
    f = module.features
    try:
        ok = (f.conv0.kernel_size == (7, 7) and f.conv0.stride == (2, 2) and f.conv0.padding == (3, 3)
              and f.pool0.kernel_size == 3 and f.pool0.stride == 2 and f.pool0.padding == 1)
        for name in ("denseblock1", "denseblock2"):
            for layer in getattr(f, name).values():
                ok &= (
                    layer.conv2.kernel_size == (3, 3)
                    and layer.conv2.padding == (1, 1)
                    and layer.conv1.kernel_size == (1, 1)
                )
        for name in ("transition1", "transition2"):
            t = getattr(f, name)
            ok &= t.conv.kernel_size == (1, 1) and t.pool.kernel_size == 2 and t.pool.stride == 2
    except AttributeError:
        return False
    return bool(ok)


def _changed(a: int, b: int, k: int, s: int, p: int, size: int) -> tuple[int, int]:
    """Output cells of a (k, s, p) conv/pool whose receptive field meets input cells [a, b)."""
    lo = math.floor((a + p - k) / s) + 1
    hi = math.ceil((b + p) / s)
    return max(lo, 0), min(hi, size)


@dataclass
class _Window:
    start: np.ndarray  # (B,) first cell per copy
    size: int


def _clamp(centre_start: np.ndarray, size: int, grid: int) -> _Window:
    size = min(size, grid)
    return _Window(np.clip(centre_start, 0, grid - size), size)


class IncrementalDenseNet:
    """Window scores of one image, computed incrementally (see the module docstring)."""

    def __init__(self, module: torch.nn.Module, output: str = "logit"):
        self.m, self.output = module, output
        self.f = module.features

    def _score(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(logits) if self.output == "probability" else logits

    # ------------------------------------------------------------------ clean pass
    def _clean(self, x: torch.Tensor) -> dict:
        f = self.f
        h = f.pool0(f.relu0(f.norm0(f.conv0(x))))
        b1 = self._block_buffer(f.denseblock1, h)
        t1 = f.transition1(b1)
        b2 = self._block_buffer(f.denseblock2, t1)
        t2 = f.transition2(b2)
        return {"b1": b1[0], "b2": b2[0], "t2": t2[0]}

    @staticmethod
    def _block_buffer(block, x: torch.Tensor) -> torch.Tensor:
        feats = [x]
        for layer in block.values():
            feats.append(layer(feats))
        return torch.cat(feats, 1)

    # ------------------------------------------------------------------ scores
    def window_batches(
        self,
        x: torch.Tensor,
        baseline: torch.Tensor,
        starts: list[tuple[int, int]],
        patch: int,
        targets: list[int],
        batch_size: int,
        cancel=None,
        cancelled=None,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """``(offset, (n, targets) score drops of starts[offset:offset + n])`` per batch: every
        target's from the same occluded passes."""
        h, w = x.shape[-2:]
        with torch.inference_mode():  # per step: a suspended generator must not leave it on
            clean = self._clean(x)
            clean_score = self._score(self.m(x))[0, targets].float()
            pad = 8
            xpad = F.pad(x, (pad, pad, pad, pad))
            bpad = F.pad(baseline.expand_as(x), (pad, pad, pad, pad))
        for s in range(0, len(starts), batch_size):
            if cancel is not None and cancel():
                raise cancelled(f"occlusion cancelled after {s} of {len(starts)} windows")
            chunk = starts[s:s + batch_size]
            with torch.inference_mode():
                logits = self._occluded_logits(xpad, bpad, pad, (h, w), chunk, patch, clean)
                drops = (clean_score - self._score(logits)[:, targets].float()).cpu().numpy()
            yield s, drops

    def _occluded_logits(self, xpad, bpad, pad, hw, chunk, patch, clean) -> torch.Tensor:
        f = self.f
        H, W = hw
        ys = np.array([c[0] for c in chunk])
        xs = np.array([c[1] for c in chunk])
        # ---- stem: conv0 (7, 2, 3) → pool0 (3, 2, 1); output grid G1 -------------------
        g1h, g1w = clean["b1"].shape[-2:]
        c0h, c0w = (H + 1) // 2, (W + 1) // 2  # conv0 output size
        win_r = self._stem_window(ys, patch, H, c0h, g1h)
        win_c = self._stem_window(xs, patch, W, c0w, g1w)
        crop_r = 4 * win_r.start - 5 + pad
        crop_c = 4 * win_c.start - 5 + pad
        n_r, n_c = 4 * win_r.size + 7, 4 * win_c.size + 7
        crops = _gather(xpad.expand(len(chunk), -1, -1, -1), crop_r, crop_c, n_r, n_c)
        base = _gather(bpad.expand(len(chunk), -1, -1, -1), crop_r, crop_c, n_r, n_c)
        for i, (y0, x0) in enumerate(chunk):  # paste the baseline over the window, inside the image only
            r0, r1 = (np.clip([max(y0, 0) + pad - crop_r[i], min(y0 + patch, H) + pad - crop_r[i]], 0, n_r))
            q0, q1 = (np.clip([max(x0, 0) + pad - crop_c[i], min(x0 + patch, W) + pad - crop_c[i]], 0, n_c))
            crops[i, :, r0:r1, q0:q1] = base[i, :, r0:r1, q0:q1]
        # conv0's zero padding lies outside the image, where the padded input is 0 (the baseline
        # was pasted inside the image only), so conv0 runs with padding 0 on the crop.
        hstem = F.conv2d(crops, f.conv0.weight, f.conv0.bias, stride=2)
        hstem = f.relu0(f.norm0(hstem))
        rows0 = 2 * win_r.start - 1  # conv0 row of hstem[..., 0, :]
        cols0 = 2 * win_c.start - 1
        valid = _valid(rows0, cols0, hstem.shape[-2], hstem.shape[-1], c0h, c0w, hstem)
        hstem = F.max_pool2d(hstem * valid, 3, 2)
        # ---- block 1 ------------------------------------------------------------------
        t1, win_r, win_c = self._transition(
            f.transition1, self._block(f.denseblock1, clean["b1"], hstem, win_r, win_c)
        )
        # ---- block 2 ------------------------------------------------------------------
        t2_win, win_r, win_c = self._transition(
            f.transition2, self._block(f.denseblock2, clean["b2"], t1, win_r, win_c)
        )
        # ---- the rest, in full ------------------------------------------------------------
        t2 = clean["t2"].expand(len(chunk), -1, -1, -1).clone()
        for i in range(len(chunk)):
            r, c = win_r.start[i], win_c.start[i]
            t2[i, :, r:r + win_r.size, c:c + win_c.size] = t2_win[i]
        return self._tail(t2)

    def _tail(self, t2: torch.Tensor) -> torch.Tensor:
        """Blocks 3–4 and the classifier: every window changes all of them, so they run in full."""
        f = self.f
        h = f.denseblock3(t2.contiguous(memory_format=torch.channels_last))
        h = f.norm5(f.denseblock4(f.transition3(h)))
        h = F.adaptive_avg_pool2d(F.relu(h), 1).flatten(1)
        return self.m.classifier(h)

    @staticmethod
    def _stem_window(starts: np.ndarray, patch: int, size: int, conv_size: int, grid: int) -> _Window:
        spans = []
        for y0 in starts:
            a, b = max(int(y0), 0), min(int(y0) + patch, size)
            a, b = _changed(a, b, 7, 2, 3, conv_size)
            spans.append(_changed(a, b, 3, 2, 1, grid))
        width = max(b - a for a, b in spans)
        return _clamp(np.array([a for a, _ in spans]), width, grid)

    @staticmethod
    def _block(block, clean_buf: torch.Tensor, new_input: torch.Tensor, win_r: _Window, win_c: _Window):
        """Recompute a dense block inside each copy's changed window.

        Each copy's state is the clean block buffer cropped to its final changed window plus a
        two-cell margin (zero outside the grid); layer windows grow by one cell per 3×3 conv,
        nested inside it. Returns the state, the final windows and the state's grid origin.
        """
        n = new_input.shape[0]
        gh, gw = clean_buf.shape[-2:]
        wins_r, wins_c = [win_r], [win_c]
        for _ in block.values():
            wins_r.append(_clamp(wins_r[-1].start - 1, wins_r[-1].size + 2, gh))
            wins_c.append(_clamp(wins_c[-1].start - 1, wins_c[-1].size + 2, gw))
        last_r, last_c = wins_r[-1], wins_c[-1]
        # state cell (i, j) ↔ grid cell (origin_r + i, origin_c + j); origin = final window − 2
        origin_r, origin_c = last_r.start - 2, last_c.start - 2
        padded = F.pad(clean_buf[None], (2, 2, 2, 2))
        state = _gather(
            padded.expand(n, -1, -1, -1), last_r.start, last_c.start, last_r.size + 4, last_c.size + 4
        )
        _scatter(state, new_input, win_r.start - origin_r, win_c.start - origin_c, 0)
        c_in = new_input.shape[1]
        for layer, r, c in zip(block.values(), wins_r[1:], wins_c[1:]):
            inp = _gather(
                state[:, :c_in], r.start - 1 - origin_r, c.start - 1 - origin_c, r.size + 2, c.size + 2
            )
            hmid = layer.relu2(layer.norm2(layer.conv1(layer.relu1(layer.norm1(inp)))))
            hmid = hmid * _valid(r.start - 1, c.start - 1, r.size + 2, c.size + 2, gh, gw, hmid)
            new = F.conv2d(hmid, layer.conv2.weight, layer.conv2.bias, padding=0)
            _scatter(state, new, r.start - origin_r, c.start - origin_c, c_in)
            c_in += new.shape[1]
        return state, last_r, last_c, (origin_r, origin_c), (gh, gw)

    @staticmethod
    def _transition(trans, block_out):
        """Transition (BN-ReLU-1×1 conv-2×2 avg-pool) on each copy's changed window, even-aligned."""
        state, r, c, (origin_r, origin_c), (gh, gw) = block_out

        def even(win: _Window, grid: int) -> _Window:
            size = min(2 * math.ceil((win.size + 1) / 2), grid)
            start = np.clip(2 * (win.start // 2), 0, grid - size)
            return _Window(start, size)

        er, ec = even(r, gh), even(c, gw)
        region = _gather(state, er.start - origin_r, ec.start - origin_c, er.size, ec.size)
        return trans(region), _Window(er.start // 2, er.size // 2), _Window(ec.start // 2, ec.size // 2)


def _gather(t: torch.Tensor, rows: np.ndarray, cols: np.ndarray, h: int, w: int) -> torch.Tensor:
    """Per-copy windows: out[b] = t[b, :, rows[b]:rows[b]+h, cols[b]:cols[b]+w] (channels_last).

    One slice per copy, copied into the output: 1.5–3× faster on CPU than gathering the same cells
    with index tensors (advanced indexing; 0.65 vs 1.8 ms at 256 channels, 0.85 vs 1.25 ms at 512),
    and the same values. The engine runs on CPU only (:func:`~.occlusion.pick_engine`)."""
    out = torch.empty((t.shape[0], t.shape[1], h, w), dtype=t.dtype, device=t.device,
                      memory_format=torch.channels_last)
    for b, (r, c) in enumerate(zip(rows.tolist(), cols.tolist())):
        out[b] = t[b, :, r:r + h, c:c + w]
    return out


def _scatter(buf: torch.Tensor, values: torch.Tensor, rows: np.ndarray, cols: np.ndarray, c0: int) -> None:
    n, c, h, w = values.shape
    dev = buf.device
    ri = torch.as_tensor(rows, device=dev).view(n, 1, 1) + torch.arange(h, device=dev).view(1, h, 1)
    ci = torch.as_tensor(cols, device=dev).view(n, 1, 1) + torch.arange(w, device=dev).view(1, 1, w)
    bi = torch.arange(n, device=dev).view(n, 1, 1)
    buf[bi, c0:c0 + c, ri, ci] = values.permute(0, 2, 3, 1)


def _valid(rows0, cols0, h: int, w: int, grid_h: int, grid_w: int, like: torch.Tensor) -> torch.Tensor:
    """(B, 1, h, w) 1 where a window cell lies inside the grid, 0 in the padding."""
    r = torch.as_tensor(rows0, device=like.device).view(-1, 1) + torch.arange(h, device=like.device).view(
        1, h
    )
    c = torch.as_tensor(cols0, device=like.device).view(-1, 1) + torch.arange(w, device=like.device).view(
        1, w
    )
    vr = ((r >= 0) & (r < grid_h)).to(like.dtype)
    vc = ((c >= 0) & (c < grid_w)).to(like.dtype)
    return (vr[:, :, None] * vc[:, None, :])[:, None]
