"""Pure rules of analytics: no SQL, no boto3, no I/O."""
