"""Pipelines and their stages (staff): `/organizations/{orgId}/pipelines`.

Staff (owner, admin, coach) may read; creating, renaming, reordering and archiving is for owners and admins.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import auth_subject, caller, entity_id, organization_id
from api.idempotent import respond_once
from api.operations import MANAGER, Operations
from api.pipelines.schemas_pipelines import (
    AddStageBody,
    CreatePipelineBody,
    Pipeline,
    RenamePipelineBody,
    ReorderStagesBody,
    Stage,
    UpdateStageBody,
)
from api.schemas import Envelope, ListEnvelope
from leadcrm.directory.access import require_staff
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.directory.rules import Actor
from leadcrm.pipelines import editing as editing
from leadcrm.pipelines import queries
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Pipelines")

CREATED = {201: {"description": "Created (or the first answer replayed, with the same Idempotency-Key)"}}
PIPELINES = "/organizations/<orgId>/pipelines"
PIPELINE = f"{PIPELINES}/<pipelineId>"
STAGES = f"{PIPELINE}/stages"
STAGE = f"{STAGES}/<stageId>"


def _staff(uow: UnitOfWork, orgId: str) -> Actor:
    return require_staff(caller(uow, router, orgId))


def _manager(uow: UnitOfWork, orgId: str) -> Actor:
    return gate(WorkspaceAction.EDIT_PIPELINES)(caller(uow, router, orgId))


def _pipeline_id(raw: str) -> uuid.UUID:
    return entity_id(raw, "PIPELINE_NOT_FOUND")


def _stage_id(raw: str) -> uuid.UUID:
    return entity_id(raw, "STAGE_NOT_FOUND")


def _pipeline(view: queries.PipelineView) -> Pipeline:
    return Pipeline.model_validate(view, from_attributes=True)


def _stage(view: queries.StageView) -> Stage:
    return Stage.model_validate(view, from_attributes=True)


@ops.get(
    PIPELINES,
    "listPipelines",
    "The organization's pipelines with their stages",
    "The organization's pipelines with their stages in order; archived ones with `includeArchived`.",
)
def index(
    orgId: str,  # the path names it as the API documents it
    include_archived: Annotated[bool, Query(alias="includeArchived")] = False,
) -> ListEnvelope[Pipeline]:
    subject, org = auth_subject(router), organization_id(orgId)
    with UnitOfWork() as uow:
        _, views = queries.list_pipelines_as_member(
            uow.connection, subject, org, require_staff, include_archived=include_archived
        )
        uow.commit()  # keeps the default pipeline when this read seeded it
    # A handful per organization: answered whole, nextCursor null as every list has one.
    return ListEnvelope[Pipeline](data=[_pipeline(v) for v in views], next_cursor=None)


@ops.get(
    PIPELINE,
    "getPipeline",
    "One pipeline with its stages",
    "One pipeline with its stages in order.",
    errors={404: ["PIPELINE_NOT_FOUND"]},
)
def read(
    orgId: str,
    pipelineId: str,
    include_archived: Annotated[bool, Query(alias="includeArchived")] = False,
) -> Envelope[Pipeline]:
    with UnitOfWork() as uow:
        actor = _staff(uow, orgId)
        view = queries.get_pipeline(
            uow.connection, actor.organization_id, _pipeline_id(pipelineId), include_archived_stages=include_archived
        )
    return Envelope[Pipeline](data=_pipeline(view))


@ops.post(
    PIPELINES,
    "createPipeline",
    "Create a pipeline",
    "Creates a pipeline with its stages; a pipeline always keeps a `new`, a `lost` and a win stage.",
    who=MANAGER,
    errors={400: ["PIPELINE_STAGE_LIMIT", "PIPELINE_WIN_COVERAGE"], 409: ["PIPELINE_LIMIT_REACHED"]},
    ok=CREATED,
)
def create(
    orgId: str,
    body: Annotated[CreatePipelineBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key", max_length=255)] = None,
) -> Response[Envelope[Pipeline]]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        stages = [editing.NewStage(name=s.name, category=s.category) for s in body.stages] if body.stages else None
        return respond_once(
            uow,
            f"pipelines.create:{actor.organization_id}",
            idempotency_key,
            body,
            201,
            lambda: Envelope[Pipeline](data=_pipeline(editing.create_pipeline(uow, actor, body.name, stages))),
        )


@ops.patch(
    PIPELINE,
    "renamePipeline",
    "Rename a pipeline",
    "Renames a pipeline that is not archived.",
    who=MANAGER,
    errors={404: ["PIPELINE_NOT_FOUND"], 409: ["PIPELINE_ARCHIVED"]},
)
def rename(orgId: str, pipelineId: str, body: Annotated[RenamePipelineBody, Body()]) -> Envelope[Pipeline]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = editing.rename_pipeline(uow, actor, _pipeline_id(pipelineId), body.name)
        uow.commit()
    return Envelope[Pipeline](data=_pipeline(view))


@ops.post(
    f"{PIPELINE}/archive",
    "archivePipeline",
    "Archive a pipeline",
    "Archives a pipeline; the default pipeline is never archived.",
    who=MANAGER,
    errors={400: ["DEFAULT_PIPELINE_CANNOT_BE_ARCHIVED"], 404: ["PIPELINE_NOT_FOUND"]},
)
def archive(orgId: str, pipelineId: str) -> Envelope[Pipeline]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = editing.archive_pipeline(uow, actor, _pipeline_id(pipelineId))
        uow.commit()
    return Envelope[Pipeline](data=_pipeline(view))


@ops.post(
    STAGES,
    "addPipelineStage",
    "Add a stage",
    "Adds a stage at a position.",
    who=MANAGER,
    errors={
        400: ["PIPELINE_STAGE_LIMIT", "STAGE_POSITION_OUT_OF_RANGE"],
        404: ["PIPELINE_NOT_FOUND"],
        409: ["PIPELINE_ARCHIVED"],
    },
    ok=CREATED,
)
def add_stage(
    orgId: str,
    pipelineId: str,
    body: Annotated[AddStageBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key", max_length=255)] = None,
) -> Response[Envelope[Stage]]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        pipeline_id = _pipeline_id(pipelineId)
        new = editing.NewStage(name=body.name, category=body.category)
        return respond_once(
            uow,
            f"pipelines.add_stage:{actor.organization_id}:{pipeline_id}",
            idempotency_key,
            body,
            201,
            lambda: Envelope[Stage](data=_stage(editing.add_stage(uow, actor, pipeline_id, new, body.position))),
        )


# Registered before …/stages/<stageId>: a different method, but kept first so `order` is never read as an id.
@ops.put(
    f"{STAGES}/order",
    "reorderPipelineStages",
    "Reorder the active stages",
    "Puts the active stages in this order: every active stage once.",
    who=MANAGER,
    errors={400: ["STAGE_ORDER_MISMATCH"], 404: ["PIPELINE_NOT_FOUND"], 409: ["PIPELINE_ARCHIVED"]},
)
def reorder_stages(orgId: str, pipelineId: str, body: Annotated[ReorderStagesBody, Body()]) -> Envelope[Pipeline]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = editing.reorder_stages(uow, actor, _pipeline_id(pipelineId), body.stage_ids)
        uow.commit()
    return Envelope[Pipeline](data=_pipeline(view))


@ops.patch(
    STAGE,
    "updatePipelineStage",
    "Rename a stage or change its category",
    (
        "Renames a stage or changes its category; a stage holding leads keeps its category, and the pipeline keeps its "
        "win coverage."
    ),
    who=MANAGER,
    errors={
        400: ["PIPELINE_WIN_COVERAGE"],
        404: ["PIPELINE_NOT_FOUND", "STAGE_NOT_FOUND"],
        409: ["PIPELINE_ARCHIVED", "STAGE_ARCHIVED", "STAGE_HAS_LEADS"],
    },
)
def update_stage(
    orgId: str, pipelineId: str, stageId: str, body: Annotated[UpdateStageBody, Body()]
) -> Envelope[Stage]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = editing.update_stage(
            uow, actor, _pipeline_id(pipelineId), _stage_id(stageId), name=body.name, category=body.category
        )
        uow.commit()
    return Envelope[Stage](data=_stage(view))


@ops.post(
    f"{STAGE}/archive",
    "archivePipelineStage",
    "Archive a stage that holds no lead",
    "Archives a stage that holds no lead; the pipeline keeps a `new`, a `lost` and a win stage.",
    who=MANAGER,
    errors={
        400: ["PIPELINE_WIN_COVERAGE"],
        404: ["PIPELINE_NOT_FOUND", "STAGE_NOT_FOUND"],
        409: ["PIPELINE_ARCHIVED", "STAGE_HAS_LEADS"],
    },
)
def archive_stage(orgId: str, pipelineId: str, stageId: str) -> Envelope[Stage]:
    with UnitOfWork() as uow:
        actor = _manager(uow, orgId)
        view = editing.archive_stage(uow, actor, _pipeline_id(pipelineId), _stage_id(stageId))
        uow.commit()
    return Envelope[Stage](data=_stage(view))
