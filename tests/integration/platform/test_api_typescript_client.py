"""The TypeScript client a dashboard team generates from /openapi.json compiles under `tsc --strict`.

What a dashboard developer does, in a temporary folder: `openapi-typescript` turns the document the API serves
into types, and the usage sample of clients/typescript/ (create a lead, page through the caller's leads, move a
stage, read a refusal as the Error schema) is compiled against them with `openapi-fetch`. The Node tools come
from the repository's package-lock.json (`make npm`, a step of `make test`).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from api.handler import openapi_schema

REPO_ROOT = Path(__file__).resolve().parents[3]
NODE_MODULES = REPO_ROOT / "node_modules"
SAMPLE = REPO_ROOT / "clients" / "typescript"
# The flags of the README's generation command: a property with a default may be left out of a request body
# (without this, openapi-typescript makes every defaulted property of a body required).
GENERATE_FLAGS = ("--default-non-nullable=false",)


def _tool(name: str) -> str:
    path = NODE_MODULES / ".bin" / name
    if not path.exists():  # a missing toolchain is a failure to fix, never a skipped check
        pytest.fail(f"{path} is missing: run `make npm` (npm ci from package-lock.json)")
    return str(path)


def _build_client(document: dict[str, Any], folder: Path) -> subprocess.CompletedProcess[str]:
    """Generate types from `document` in `folder` and compile the sample there; the first failing step's result."""
    (folder / "openapi.json").write_text(json.dumps(document))
    for source in (*SAMPLE.glob("*.ts"), SAMPLE / "tsconfig.json"):
        if source.name != "api.ts":  # a generated api.ts left by `make client` is not the sample
            shutil.copy(source, folder / source.name)
    (folder / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)  # openapi-fetch's types
    generate = [_tool("openapi-typescript"), "openapi.json", "-o", "api.ts", *GENERATE_FLAGS]
    generated = subprocess.run(generate, cwd=folder, capture_output=True, text=True, timeout=120)
    if generated.returncode != 0:
        return generated
    return subprocess.run(
        [_tool("tsc"), "-p", "tsconfig.json"], cwd=folder, capture_output=True, text=True, timeout=120
    )


def _failure(result: subprocess.CompletedProcess[str]) -> str:
    return f"{' '.join(result.args[:2])} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"


def test_the_usage_sample_compiles_against_the_types_of_the_served_document(tmp_path: Path) -> None:
    result = _build_client(openapi_schema(), tmp_path)

    assert result.returncode == 0, _failure(result)
    assert "export interface paths" in (tmp_path / "api.ts").read_text()


def test_a_reference_to_a_schema_the_document_lacks_fails_the_client(tmp_path: Path) -> None:
    document = copy.deepcopy(openapi_schema())
    document["components"]["schemas"]["Error"]["properties"]["error"] = {"$ref": "#/components/schemas/Missing"}

    result = _build_client(document, tmp_path)

    assert result.returncode != 0
    assert "#/components/schemas" in result.stdout + result.stderr


def test_an_error_body_that_is_not_the_error_schema_fails_the_compile(tmp_path: Path) -> None:
    document = copy.deepcopy(openapi_schema())
    # a code the sample compares with "DUPLICATE_LEAD" stops being text
    document["components"]["schemas"]["ErrorDetail"]["properties"]["code"] = {"type": "integer"}

    result = _build_client(document, tmp_path)

    assert result.returncode != 0
    assert "error TS" in result.stdout, _failure(result)
