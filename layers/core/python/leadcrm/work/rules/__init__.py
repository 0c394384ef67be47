"""Pure rules of work: no SQL, no boto3, no I/O."""
