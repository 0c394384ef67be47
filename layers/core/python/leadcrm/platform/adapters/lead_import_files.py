"""CSV files of lead imports in S3: a presigned PUT for the dashboard, and the file read back as a stream.

The bucket is LEAD_IMPORTS_BUCKET. The file is never read whole: `iter_chunks` pulls it from S3 a chunk at a
time and `ingestion.rules.csv_import.decoded_lines` turns the chunks into lines for the csv reader.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta

from leadcrm.platform import clock
from leadcrm.platform.adapters.aws import client

UPLOAD_EXPIRES_SECONDS = 900
READ_CHUNK_BYTES = 256 * 1024
CSV_CONTENT_TYPE = "text/csv"


def bucket() -> str:
    return os.environ["LEAD_IMPORTS_BUCKET"]


def presigned_upload(key: str) -> tuple[str, datetime]:
    """A URL the dashboard PUTs the file to (with `content-type: text/csv`), and when it expires."""
    url = client("s3").generate_presigned_url(
        "put_object",
        Params={"Bucket": bucket(), "Key": key, "ContentType": CSV_CONTENT_TYPE},
        ExpiresIn=UPLOAD_EXPIRES_SECONDS,
        HttpMethod="PUT",
    )
    # S3 checks the signature against the real time, so the expiry it keeps is the real one (not the clock's).
    return str(url), clock.real_now() + timedelta(seconds=UPLOAD_EXPIRES_SECONDS)


def uploaded_size(key: str) -> int | None:
    """The uploaded file's size in bytes; None when nothing was uploaded yet."""
    s3 = client("s3")
    try:
        return int(s3.head_object(Bucket=bucket(), Key=key)["ContentLength"])
    except s3.exceptions.ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise


def iter_chunks(key: str) -> Iterator[bytes]:
    """The file's bytes as S3 streams them, READ_CHUNK_BYTES at a time. FileNotFoundError when it is gone
    (expired by the bucket's lifecycle, or never uploaded)."""
    s3 = client("s3")
    try:
        body = s3.get_object(Bucket=bucket(), Key=key)["Body"]
    except s3.exceptions.NoSuchKey:
        raise FileNotFoundError(key) from None
    try:
        yield from body.iter_chunks(READ_CHUNK_BYTES)
    finally:
        body.close()
