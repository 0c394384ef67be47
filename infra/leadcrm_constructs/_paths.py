"""Filesystem locations of the code assets, resolved from this file so synthesis works from any cwd."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS_DIR = REPO_ROOT / "functions"
CORE_LAYER_DIR = REPO_ROOT / "layers" / "core"

# Never ship interpreter caches or local build metadata (``pip install -e .`` writes an egg-info
# into layers/core/python); they would also change the asset hash on every machine.
ASSET_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/*.egg-info", "**/.pytest_cache", "**/.ruff_cache"]

# The third-party dependencies layer: ``make layer`` writes build/layer/python/; until it has run,
# synthesis uses the committed placeholder (and warns) so that it still works offline.
DEPENDENCIES_LAYER_DIR = REPO_ROOT / "build" / "layer"
DEPENDENCIES_LAYER_PLACEHOLDER_DIR = REPO_ROOT / "infra" / "layer-placeholder"
DEPENDENCIES_LAYER_REQUIREMENTS = REPO_ROOT / "infra" / "layer-requirements.txt"
MIGRATIONS_DIR = CORE_LAYER_DIR / "python" / "leadcrm" / "platform" / "db" / "migrations"
