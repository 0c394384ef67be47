"""Helpers for the lead list tests and the bench: EXPLAIN a SQLAlchemy statement, read its plan nodes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, insert
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import ClauseElement, Executable

from leadcrm.leads.tables import lead_campaigns, lead_pipeline_placements, lead_tag_assignments, lead_tags, leads
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.pipelines.tables import pipeline_stages, pipelines
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7


class ExplainJson(Executable, ClauseElement):
    """`EXPLAIN (FORMAT JSON) <statement>`, with the statement's own bound parameters."""

    inherit_cache = False

    def __init__(self, statement: ClauseElement, *, analyze: bool = False) -> None:
        self.statement = statement
        self.analyze = analyze


@compiles(ExplainJson)
def _compile_explain(element: ExplainJson, compiler: Any, **kw: Any) -> str:
    options = "ANALYZE, BUFFERS, FORMAT JSON" if element.analyze else "FORMAT JSON"
    return f"EXPLAIN ({options}) " + compiler.process(element.statement, **kw)


def explain(conn: Connection, statement: ClauseElement, *, analyze: bool = False) -> dict[str, Any]:
    """The top plan node of the statement as PostgreSQL would run it now."""
    raw = conn.execute(ExplainJson(statement, analyze=analyze)).scalar_one()
    document = json.loads(raw) if isinstance(raw, str) else raw
    return document[0]


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of a plan (the top one under "Plan", or a node), depth first."""
    node = plan.get("Plan", plan)
    yield node
    for child in node.get("Plans", ()):
        yield from plan_nodes(child)


def seq_scans_on(plan: dict[str, Any], table: str) -> list[dict[str, Any]]:
    return [n for n in plan_nodes(plan) if n["Node Type"] == "Seq Scan" and n.get("Relation Name") == table]


def indexes_used_on(plan: dict[str, Any], table: str) -> list[str]:
    return [n["Index Name"] for n in plan_nodes(plan) if "Index Name" in n and n.get("Relation Name", table) == table]


# -- data for list and detail tests, written directly (fast, and with timestamps the API would not let us set)


@dataclass(frozen=True)
class Board:
    """A pipeline of an organization with its stages by category."""

    organization_id: uuid.UUID
    pipeline_id: uuid.UUID
    name: str
    stages: dict[str, uuid.UUID]


def make_board(
    organization_id: uuid.UUID,
    name: str = "Sales",
    categories: tuple[str, ...] = tuple(c.value for c in StageCategory),
    *,
    default: bool = False,
) -> Board:
    """A pipeline with one stage per category, named after the category (e.g. "contacted stage")."""
    pipeline_id = uuid7()
    stages = {category: uuid7() for category in categories}
    with get_engine().begin() as conn:
        conn.execute(
            insert(pipelines).values(id=pipeline_id, organization_id=organization_id, name=name, is_default=default)
        )
        conn.execute(
            insert(pipeline_stages),
            [
                {
                    "id": stage_id,
                    "organization_id": organization_id,
                    "pipeline_id": pipeline_id,
                    "name": f"{category} stage",
                    "category": category,
                    "position": position,
                }
                for position, (category, stage_id) in enumerate(stages.items())
            ],
        )
    return Board(organization_id=organization_id, pipeline_id=pipeline_id, name=name, stages=stages)


def insert_lead(
    board: Board,
    *,
    name: str | None = "Lead",
    email: str | None = None,
    phone: str | None = None,
    category: str = "new",
    created_at: datetime | None = None,
    updated_at: datetime | None = None,
    status_changed_at: datetime | None = None,
    assigned_to: uuid.UUID | None = None,
    campaign_id: uuid.UUID | None = None,
    archived: bool = False,
    is_test: bool = False,
) -> uuid.UUID:
    """A lead on `board` at the stage of `category` (its primary placement)."""
    lead_id = uuid7()
    now = datetime.now(UTC)
    created_at = created_at or now
    with get_engine().begin() as conn:
        conn.execute(
            insert(leads).values(
                id=lead_id,
                organization_id=board.organization_id,
                name=name,
                email=email,
                phone=phone,
                status=category,
                pipeline_id=board.pipeline_id,
                stage_id=board.stages[category],
                assigned_to_user_id=assigned_to,
                campaign_id=campaign_id,
                archived_at=now if archived else None,
                is_test=is_test,
                created_at=created_at,
                updated_at=updated_at or created_at,
                status_changed_at=status_changed_at or created_at,
            )
        )
    return lead_id


def place(board: Board, lead_id: uuid.UUID, category: str) -> None:
    """A secondary placement of the lead on `board`."""
    with get_engine().begin() as conn:
        conn.execute(
            insert(lead_pipeline_placements).values(
                id=uuid7(),
                organization_id=board.organization_id,
                lead_id=lead_id,
                pipeline_id=board.pipeline_id,
                stage_id=board.stages[category],
            )
        )


def make_tag(organization_id: uuid.UUID, name: str, category: str = "label") -> uuid.UUID:
    tag_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(insert(lead_tags).values(id=tag_id, organization_id=organization_id, name=name, category=category))
    return tag_id


def tag(organization_id: uuid.UUID, lead_id: uuid.UUID, *tag_ids: uuid.UUID) -> None:
    with get_engine().begin() as conn:
        conn.execute(
            insert(lead_tag_assignments),
            [{"lead_id": lead_id, "tag_id": t, "organization_id": organization_id} for t in tag_ids],
        )


def make_campaign(organization_id: uuid.UUID, name: str = "Spring ads") -> uuid.UUID:
    campaign_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(insert(lead_campaigns).values(id=campaign_id, organization_id=organization_id, name=name))
    return campaign_id


def ids(response: Any) -> list[str]:
    """The lead ids of a list response, in order."""
    return [lead["id"] for lead in response.data]


def as_str(*values: uuid.UUID) -> list[str]:
    return [str(v) for v in values]
