"""Pure rules of ingestion: no SQL, no boto3, no I/O."""
