"""Request and response bodies of erasing leads (single erase has no body and answers 204)."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import ConfigDict, Field

from api.schemas import CamelModel, OutModel
from leadcrm.leads.erase import MAX_BULK_ERASE


class BulkEraseBody(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"leadIds": ["0190b6a2-7c3e-7a10-9a51-3f0e8c2b1a10", "0190b6a2-7c3e-7a11-9a51-3f0e8c2b1a11"]}]
        }
    )
    lead_ids: Annotated[list[uuid.UUID], Field(min_length=1, max_length=MAX_BULK_ERASE)]


class EraseFailure(OutModel):
    lead_id: uuid.UUID
    reason: str  # LEAD_NOT_FOUND (unknown or another organization's id) or ERASE_FAILED


class BulkEraseOutcome(OutModel):
    erased: list[uuid.UUID]
    failed: list[EraseFailure]
