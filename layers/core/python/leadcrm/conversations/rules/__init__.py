"""Pure rules of conversations: no SQL, no boto3, no I/O."""
