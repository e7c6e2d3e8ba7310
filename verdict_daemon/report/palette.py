"""Colours: a colour-blind-safe diverging scale for pass rates and WCAG 2.x contrast for text on it.

The heatmap scale is ColorBrewer PuOr (orange = low pass rate, purple = high), which stays distinct
under the common colour-vision deficiencies; every cell also prints its value, so colour is never
the only carrier. Text on a cell is black or white, whichever contrasts more: one of them always
reaches 4.58:1 (WCAG AA needs 4.5:1).
"""

from __future__ import annotations

# PuOr, 7 classes, from a pass rate of 0 (orange) through 0.5 (neutral) to 1 (purple).
DIVERGING: tuple[str, ...] = ("#b35806", "#f1a340", "#fee0b6", "#f7f7f7", "#d8daeb", "#998ec3", "#542788")
DARK_TEXT, LIGHT_TEXT = "#000000", "#ffffff"  # one of the two always reaches 4.58:1


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def relative_luminance(hex_colour: str) -> float:
    """WCAG 2.x relative luminance of an sRGB colour."""
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in _rgb(hex_colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: str, b: str) -> float:
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def rate_colour(rate: float) -> str:
    """The diverging scale at `rate` (0..1), interpolated linearly between the PuOr classes."""
    x = min(max(rate, 0.0), 1.0) * (len(DIVERGING) - 1)
    i = min(int(x), len(DIVERGING) - 2)
    t = x - i
    lo, hi = _rgb(DIVERGING[i]), _rgb(DIVERGING[i + 1])
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(lo, hi, strict=True))


def text_on(background: str) -> str:
    """Black or white text, whichever has the higher contrast on `background`."""
    dark, light = contrast_ratio(DARK_TEXT, background), contrast_ratio(LIGHT_TEXT, background)
    return DARK_TEXT if dark >= light else LIGHT_TEXT
