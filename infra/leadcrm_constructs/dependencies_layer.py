"""Dependencies layer: the third-party packages (Powertools, pydantic, SQLAlchemy, pg8000, Alembic, ...).

``make layer`` installs the exact versions of ``infra/layer-requirements.txt`` from wheels built for
CPython 3.12 on manylinux aarch64 (``pip install --platform ... --only-binary=:all: --target``) into
``build/layer/python/``: no Docker, nothing compiled here, and no wheel for this machine's x86_64 or
Python 3.11 can slip in. Lambda mounts the layer at ``/opt``, where ``/opt/python`` is on ``sys.path``.

boto3 and botocore are not in it: the Lambda Python 3.12 runtime provides them (see the requirements
file for why). Kept apart from ``CoreLayer`` so that a change to our code does not re-upload ~60 MB
of wheels, and a version bump of a dependency does not touch our code's asset.

When ``build/layer/python`` does not exist (a fresh clone, CI, the tests), the layer is built from a
committed placeholder and the stack carries a warning annotation: synthesis stays offline and
reproducible, and a deploy without ``make layer`` is called out rather than silently broken.
"""

from pathlib import Path

from aws_cdk import Annotations
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.leadcrm_constructs._paths import (
    ASSET_EXCLUDES,
    DEPENDENCIES_LAYER_DIR,
    DEPENDENCIES_LAYER_PLACEHOLDER_DIR,
)
from infra.leadcrm_constructs.core_layer import ARCHITECTURE, RUNTIME

PLACEHOLDER_WARNING_ID = "LeadCrm:DependenciesLayerPlaceholder"
PLACEHOLDER_WARNING = (
    "build/layer/python does not exist: the dependencies layer is a placeholder and the functions "
    "cannot import their dependencies in Lambda; run make layer before deploying"
)


class DependenciesLayer(Construct):
    """A Lambda layer of pinned arm64/cp312 wheels from ``build/layer`` (or the placeholder)."""

    def __init__(self, scope: Construct, construct_id: str, *, layer_dir: Path = DEPENDENCIES_LAYER_DIR) -> None:
        super().__init__(scope, construct_id)
        self.is_placeholder = not (layer_dir / "python").is_dir()
        source = DEPENDENCIES_LAYER_PLACEHOLDER_DIR if self.is_placeholder else layer_dir
        if self.is_placeholder:
            Annotations.of(self).add_warning_v2(PLACEHOLDER_WARNING_ID, PLACEHOLDER_WARNING)
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=lambda_.Code.from_asset(str(source), exclude=ASSET_EXCLUDES),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="LeadCRM third-party dependencies (infra/layer-requirements.txt, cp312 aarch64 wheels)"
            + (" - PLACEHOLDER: run make layer" if self.is_placeholder else ""),
        )
