"""Pure rules of deals: no SQL, no boto3, no I/O."""
