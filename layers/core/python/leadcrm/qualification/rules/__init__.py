"""Pure rules of qualification: no SQL, no boto3, no I/O."""
