"""Core layer: the ``leadcrm`` package (domain, services, db, adapters) shared by every function."""

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.leadcrm_constructs._paths import ASSET_EXCLUDES, CORE_LAYER_DIR

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64


class CoreLayer(Construct):
    """A Lambda layer built from ``layers/core`` as it is on disk, with no bundling step.

    Lambda mounts a layer at ``/opt`` and puts ``/opt/python`` on ``sys.path``, so the directory's
    ``python/leadcrm/`` becomes the importable ``leadcrm`` package, the same one tests import through
    ``pythonpath = ["layers/core/python"]``.

    This layer carries only our own code. Third-party dependencies (SQLAlchemy, pg8000, pydantic,
    Powertools, ...) are in ``DependenciesLayer``, built for Python 3.12 on arm64 from pinned wheels
    by ``make layer``. Keeping the two apart means a
    change to our code does not re-upload the wheels, and this asset never needs Docker or pip to
    synthesize.
    """

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.layer = lambda_.LayerVersion(
            self,
            "Layer",
            code=lambda_.Code.from_asset(str(CORE_LAYER_DIR), exclude=ASSET_EXCLUDES),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description="LeadCRM core package (leadcrm.*): domain, services, db, adapters",
        )
