"""The measure behind "no PDF page but a book page's last is more than a third empty" (tools/book_pdf.py,
``empty_fractions`` and ``holes``), on PDF pages drawn here: ink down to a known height, the footer's margin not
counted, and only a page's last sheet excused."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, NameObject

import book_pdf  # tools/ (on the path through support.py)
import support  # noqa: F401

MM = 72 / 25.4  # PDF points per millimetre


def pdf_with_ink(*depths_mm: float, footer: bool = True) -> bytes:
    """One A4 page per depth: black from the top margin down to that depth into the printable height (0: no ink
    in the printable area), and a footer line in the bottom margin."""
    width, height = book_pdf.PAPER["width"] * MM, book_pdf.PAPER["height"] * MM
    top = height - book_pdf.MARGIN["top"] * MM
    writer = PdfWriter()
    for depth in depths_mm:
        page = writer.add_blank_page(width, height)
        ops = ["0 0 0 rg"]
        if depth:
            ops.append(f"{20 * MM:.2f} {top - depth * MM:.2f} {100 * MM:.2f} {depth * MM:.2f} re f")
        if footer:
            ops.append(f"{20 * MM:.2f} {5 * MM:.2f} {50 * MM:.2f} {2 * MM:.2f} re f")
        stream = DecodedStreamObject()
        stream.set_data(" ".join(ops).encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def printable_mm() -> float:
    return book_pdf.PAPER["height"] - book_pdf.MARGIN["top"] - book_pdf.MARGIN["bottom"]


def test_empty_share_is_measured_below_the_last_ink_without_the_footer():
    full, half, none = printable_mm(), printable_mm() / 2, 0
    fractions = book_pdf.empty_fractions(pdf_with_ink(full, half, none))
    assert fractions[0] == pytest.approx(0, abs=0.01)
    assert fractions[1] == pytest.approx(0.5, abs=0.01)
    assert fractions[2] == 1.0  # the footer alone is no content


def test_holes_names_every_sheet_past_a_third_but_a_pages_last():
    p = printable_mm()
    printed = [book_pdf.Printed("lessons/x/x", "X", pdf_with_ink(p, 0.5 * p, 0.7 * p, 0.1 * p)),
               book_pdf.Printed("book/y", "Y", pdf_with_ink(0.6 * p))]
    assert book_pdf.holes(printed) == ["lessons/x/x page 2 of 4: 50% empty"]
