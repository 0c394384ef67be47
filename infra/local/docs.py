"""Swagger UI at /docs: the stack's own /openapi.json, rendered offline from packaged assets.

The assets are swagger-ui-dist's, pinned by the repository's package-lock.json (`make npm`, which `make dev`
runs), read from node_modules on each request: no CDN, so the page works on a machine without a network.
Only the files the page loads are served, by name, so nothing else under node_modules is reachable.
"""

from __future__ import annotations

import json
from pathlib import Path

Reply = tuple[int, dict[str, str], bytes]

PREFIX = "/docs"
FRESH = {"cache-control": "no-cache"}  # the page and its settings change with this code; the assets with the lockfile
SWAGGER_UI_DIST = Path(__file__).resolve().parents[2] / "node_modules" / "swagger-ui-dist"
ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "index.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
    "oauth2-redirect.html": "text/html; charset=utf-8",
    "oauth2-redirect.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
}
INDEX_HTML = f"""<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <title>LeadCRM API</title>
    <link rel="stylesheet" type="text/css" href="{PREFIX}/swagger-ui.css" />
    <link rel="stylesheet" type="text/css" href="{PREFIX}/index.css" />
    <link rel="icon" type="image/png" href="{PREFIX}/favicon-32x32.png" sizes="32x32" />
    <link rel="icon" type="image/png" href="{PREFIX}/favicon-16x16.png" sizes="16x16" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="{PREFIX}/swagger-ui-bundle.js" charset="UTF-8"></script>
    <script src="{PREFIX}/swagger-ui-standalone-preset.js" charset="UTF-8"></script>
    <script src="{PREFIX}/swagger-initializer.js" charset="UTF-8"></script>
  </body>
</html>
"""
# swagger-ui-dist's own initializer shows the petstore; ours reads this stack's document. validatorUrl null:
# Swagger UI would otherwise send the document to an outside validator service for its badge.
SETTINGS = {
    "url": "/openapi.json",
    "dom_id": "#swagger-ui",
    "deepLinking": True,
    "persistAuthorization": True,
    "validatorUrl": None,
    "layout": "StandaloneLayout",
}
INITIALIZER_JS = f"""window.onload = function () {{
  window.ui = SwaggerUIBundle(Object.assign({json.dumps(SETTINGS)}, {{
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
  }}));
}};
"""


def is_docs_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def serve(method: str, path: str, dist: Path = SWAGGER_UI_DIST) -> Reply:
    """The page, its initializer or one of swagger-ui-dist's assets; a 404 for any other name under /docs."""
    if method not in ("GET", "HEAD"):
        return _error(405, "METHOD_NOT_ALLOWED", f"{PREFIX} is read with GET.", {"allow": "GET, HEAD"})
    name = path.removeprefix(PREFIX).lstrip("/")
    if name in ("", "index.html"):
        return 200, {"content-type": "text/html; charset=utf-8", **FRESH}, INDEX_HTML.encode()
    if name == "swagger-initializer.js":
        return 200, {"content-type": "text/javascript; charset=utf-8", **FRESH}, INITIALIZER_JS.encode()
    content_type = ASSETS.get(name)
    if content_type is None:
        return _error(404, "ROUTE_NOT_FOUND", f"No documentation asset {path}.")
    try:
        payload = (dist / name).read_bytes()
    except FileNotFoundError:
        return _error(503, "DOCS_NOT_INSTALLED", f"Swagger UI's assets are not in {dist}: run `make npm`.")
    return 200, {"content-type": content_type, "cache-control": "public, max-age=3600"}, payload


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, {"content-type": "application/json", **(headers or {})}, body
