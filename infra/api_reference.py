"""`make docs`: the API reference as one HTML file that opens from file://, for people rather than generators.

The page is Redoc's standalone bundle (node_modules/redoc, pinned by package-lock.json) with the OpenAPI
document the routes describe, both inlined: nothing is fetched when it opens, so it can be mailed, attached
to a release or read offline. It is written from the code each time and not committed (docs/api/ is ignored):
the document is the source, and a committed copy would go stale with every route change.

    python -m infra.api_reference [docs/api/index.html]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
REDOC_BUNDLE = REPO_ROOT / "node_modules" / "redoc" / "bundles" / "redoc.standalone.js"
DEFAULT_OUTPUT = REPO_ROOT / "docs" / "api" / "index.html"
# Responses a reader opens first are the successes; every error response stays one click away.
REDOC_OPTIONS = {"expandResponses": "200,201,202", "jsonSampleExpandLevel": 3, "sortTagsAlphabetically": True}
# Inside <script>, "</script" ends the element and "<!--" followed by "<script" changes how the HTML parser
# reads what follows; "\x3C" is "<" to JavaScript (in strings, regular expressions and JSON alike), not to HTML.
_HTML_SENSITIVE = re.compile(r"<(?=!--|/?script)", re.IGNORECASE)


def _inline(text: str) -> str:
    return _HTML_SENSITIVE.sub(r"\\x3C", text)


def render(document: dict[str, Any], bundle: str) -> str:
    """The page: the document as inert JSON, Redoc's bundle, and the one call that renders one with the other."""
    title = str(document.get("info", {}).get("title", "API reference"))
    # JSON's own "\u003c" keeps any "<" of a description from reaching the HTML parser.
    spec = json.dumps(document, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    options = json.dumps(REDOC_OPTIONS)
    escaped_title = title.replace("&", "&amp;").replace("<", "&lt;")
    return f"""<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>{escaped_title}</title>
    <style>body {{ margin: 0; padding: 0; }}</style>
  </head>
  <body>
    <div id="redoc"></div>
    <script type="application/json" id="openapi-document">{spec}</script>
    <script>{_inline(bundle)}</script>
    <script>
      Redoc.init(JSON.parse(document.getElementById("openapi-document").textContent), {options},
        document.getElementById("redoc"));
    </script>
  </body>
</html>
"""


def write(output: Path, document: dict[str, Any] | None = None, bundle_path: Path = REDOC_BUNDLE) -> Path:
    if not bundle_path.exists():
        raise SystemExit(f"{bundle_path} is missing: run `make npm` (npm ci from package-lock.json)")
    if document is None:
        from api.handler import openapi_schema  # the document the API serves at /openapi.json

        document = openapi_schema()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render(document, bundle_path.read_text(encoding="utf-8")), encoding="utf-8")
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the API reference as one self-contained HTML file.")
    parser.add_argument("output", type=Path, nargs="?", default=DEFAULT_OUTPUT)
    written = write(parser.parse_args().output)
    print(f"wrote {written} ({written.stat().st_size // 1024} KiB); open it in a browser, no server needed")


if __name__ == "__main__":
    main()
