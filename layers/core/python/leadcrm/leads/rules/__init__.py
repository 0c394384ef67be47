"""Pure rules of leads: no SQL, no boto3, no I/O."""
