"""Thin, lazily created adapters for AWS. Endpoints follow AWS_ENDPOINT_URL, so moto stands in locally."""
