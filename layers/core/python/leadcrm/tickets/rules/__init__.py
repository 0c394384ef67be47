"""Pure rules of tickets: no SQL, no boto3, no I/O."""
