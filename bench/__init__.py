"""Benchmarks of the lead list, the lead detail and bulk stage moves on a seeded database (`make bench`)."""
