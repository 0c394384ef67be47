"""The lead record: intake, dedup and identity, moves, placements, bulk moves, archive, returning leads,
conversion, erase, tags, campaigns, touches, lists and detail.
"""
