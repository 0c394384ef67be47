"""One migrated template per test run, and a PostgreSQL of its own for each pytest-xdist worker.

The migrations run once per run: the first process that needs a database takes a file lock in the run's
directory and builds the template; every other process waits on the lock and finds it built.

- No DATABASE_URL: the template is a private cluster whose database `leadcrm_template` is migrated, then
  stopped. Each worker (or the only process, without xdist) copies its data directory and starts a cluster
  of its own on a port of its own, so the fault tests restart their own worker's cluster only.
- DATABASE_URL (the caller's server): the template is a migrated database `leadcrm_template_<hex>` on that
  server; each worker's databases are `CREATE DATABASE ... TEMPLATE` of it, on the same server.

The run's directory is made by the xdist controller (or the only process) in `pytest_configure` and handed
to the workers in their `workerinput`; that same process removes the template at `pytest_unconfigure`,
after every worker has finished, and stops any worker cluster a crashed worker left running.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.database import create_database, drop_database, engine_for

if TYPE_CHECKING:
    from infra.local.postgres import LocalPostgres

RUN_DIR_KEY = "leadcrm_run_dir"  # in each worker's workerinput
RUN_DIR = pytest.StashKey[Path]()  # in the controller's (or the only process's) config.stash
TEMPLATE_DATABASE = "leadcrm_template"
_TEMPLATE_FILE = "template.json"
_CLUSTERS_DIR = "clusters"


@dataclass(frozen=True)
class Template:
    database: str
    cluster_root: str | None = None  # a stopped private cluster holding `database`
    server_url: str | None = None  # or: `database` lives on the caller's server


# -- the run's directory (controller side) --------------------------------------------------------------


def make_run_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="leadcrm-test-run-"))


def run_dir_of(config: pytest.Config) -> Path:
    """The directory shared by every process of this run (made by the controller, or by this process)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and RUN_DIR_KEY in workerinput:
        return Path(workerinput[RUN_DIR_KEY])
    return config.stash[RUN_DIR]


def cleanup_run(run_dir: Path) -> None:
    """After the last worker: worker clusters still running (a crashed worker's) and the template go."""
    from infra.local.postgres import LocalPostgres

    try:
        clusters = run_dir / _CLUSTERS_DIR
        for record in sorted(clusters.glob("*")) if clusters.is_dir() else []:
            root = Path(record.read_text())
            if root.exists():
                try:
                    LocalPostgres(root, durable=False).stop()
                finally:
                    shutil.rmtree(root, ignore_errors=True)
        template = _read_template(run_dir)
        if template is not None:
            if template.cluster_root:
                shutil.rmtree(template.cluster_root, ignore_errors=True)
            elif template.server_url:
                drop_database(template.server_url, template.database)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


# -- the template (built once, by whichever process needs it first) --------------------------------------


@contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    with open(run_dir / "template.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_template(run_dir: Path) -> Template | None:
    path = run_dir / _TEMPLATE_FILE
    return Template(**json.loads(path.read_text())) if path.exists() else None


def template(run_dir: Path) -> Template:
    """The run's migrated template, built now unless another process already did."""
    with _locked(run_dir):
        found = _read_template(run_dir)
        if found is not None:
            return found
        server_url = os.environ.get("DATABASE_URL")
        built = _template_on_server(server_url) if server_url else _template_cluster()
        partial = run_dir / (_TEMPLATE_FILE + ".tmp")
        partial.write_text(json.dumps(asdict(built)))
        partial.rename(run_dir / _TEMPLATE_FILE)
        return built


def migrate(url: str) -> None:
    """Alembic to head on `url`, through an engine of its own that leaves no connection behind (a template
    database with a connection open cannot be copied)."""
    from leadcrm.platform.db.migrate import upgrade

    engine = engine_for(url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()


def _template_cluster() -> Template:
    from infra.local.postgres import LocalPostgres

    root = Path(tempfile.mkdtemp(prefix="leadcrm-pg-template-"))
    cluster = LocalPostgres(root, durable=False)
    try:
        cluster.start()
        migrate(create_database(cluster.url, TEMPLATE_DATABASE))
    except BaseException:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
        raise
    cluster.stop()
    (root / "port").unlink(missing_ok=True)  # each copy picks a port of its own
    return Template(database=TEMPLATE_DATABASE, cluster_root=str(root))


def _template_on_server(server_url: str) -> Template:
    name = f"leadcrm_template_{uuid.uuid4().hex[:12]}"
    url = create_database(server_url, name)
    try:
        migrate(url)
    except BaseException:
        drop_database(server_url, name)
        raise
    return Template(database=name, server_url=server_url)


# -- a worker's own copy --------------------------------------------------------------------------------


def start_worker_cluster(run_dir: Path, found: Template, worker: str) -> LocalPostgres:
    """A cluster of this worker's own, started from a copy of the template cluster's data directory."""
    from infra.local.postgres import LocalPostgres

    assert found.cluster_root is not None
    root = Path(tempfile.mkdtemp(prefix=f"leadcrm-pg-{worker}-"))
    clusters = run_dir / _CLUSTERS_DIR
    clusters.mkdir(exist_ok=True)
    (clusters / worker).write_text(str(root))
    # cp -a keeps the owner (the postgres account when run as root) and the 0700 mode PostgreSQL requires.
    subprocess.run(["cp", "-a", str(Path(found.cluster_root) / "data"), str(root / "data")], check=True)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        root.chmod(0o700)
    cluster = LocalPostgres(root, durable=False)
    cluster.start()
    return cluster


def remove_worker_cluster(run_dir: Path, cluster: LocalPostgres, worker: str) -> None:
    try:
        cluster.stop()
    finally:
        shutil.rmtree(cluster.root, ignore_errors=True)
        (run_dir / _CLUSTERS_DIR / worker).unlink(missing_ok=True)


def clone_database(server_url: str, name: str, found: Template) -> str:
    """CREATE DATABASE `name` TEMPLATE the run's template, on the server of `server_url`; returns its URL."""
    return create_database(server_url, name, template=found.database)
