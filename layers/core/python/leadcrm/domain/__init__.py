"""Pure rules: no I/O, no SQL, no AWS. Everything here is unit-tested on its own."""
