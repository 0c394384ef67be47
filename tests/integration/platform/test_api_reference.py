"""`make docs`: one HTML page, the served document rendered by Redoc, that opens from file:// with no network."""

from __future__ import annotations

import json
import re
from pathlib import Path

from api.handler import openapi_schema
from infra.api_reference import REDOC_BUNDLE, render, write

SCRIPT = re.compile(r"<script([^>]*)>(.*?)</script>", re.DOTALL)


def test_the_reference_embeds_the_served_document_and_redocs_bundle(tmp_path: Path) -> None:
    page = write(tmp_path / "docs" / "index.html").read_text()

    scripts = SCRIPT.findall(page)
    assert [attributes for attributes, _ in scripts] == [' type="application/json" id="openapi-document"', "", ""]
    assert json.loads(scripts[0][1]) == openapi_schema()
    assert "Redoc.init(" in scripts[2][1]
    assert len(scripts[1][1]) > len(REDOC_BUNDLE.read_text()) * 0.99  # the bundle itself, inlined


def test_the_reference_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    page = write(tmp_path / "index.html").read_text()

    markup = SCRIPT.sub("", page)  # what the bundle's own strings say is not markup of the page
    assert re.findall(r"<(?:script|link|img|iframe|object|embed)\b[^>]*>", markup) == []
    assert not re.search(r"<script[^>]*\bsrc=", page)


def test_markup_in_a_description_cannot_end_the_embedded_document() -> None:
    hostile = "</script><script>alert(1)</script><!--"
    document = {"openapi": "3.1.0", "info": {"title": "T", "version": "1", "description": hostile}, "paths": {}}

    page = render(document, bundle='window.x = "</script><!--<script>";')

    scripts = SCRIPT.findall(page)
    assert len(scripts) == 3
    assert json.loads(scripts[0][1])["info"]["description"] == hostile
    assert scripts[1][1] == r'window.x = "\x3C/script>\x3C!--\x3Cscript>";'
