"""Messages to the work queues: one JSON body tagged with its `kind` as a message attribute (so a consumer can
route before parsing), sent to the queue a variable names.

The URL is read when a message is sent; the functions that send check their variables at cold start
(`leadcrm.platform.environment`). graph_fetch imports this module: no pydantic.
"""

from __future__ import annotations

import json
import os
from typing import Any

from leadcrm.platform.adapters.aws import client


def send(url_variable: str, kind: str, body: dict[str, Any]) -> str:
    """Sends `body` as it is to the queue `url_variable` names, tagged `kind`; the message id."""
    url = os.environ.get(url_variable)
    if not url:
        raise RuntimeError(f"{url_variable} is not set")
    response = client("sqs").send_message(
        QueueUrl=url,
        MessageBody=json.dumps(body),
        MessageAttributes={"kind": {"DataType": "String", "StringValue": kind}},
    )
    return str(response["MessageId"])
