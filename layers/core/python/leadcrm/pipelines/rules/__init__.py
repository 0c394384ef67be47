"""Pure rules of pipelines: no SQL, no boto3, no I/O."""
