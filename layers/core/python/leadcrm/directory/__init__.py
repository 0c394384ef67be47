"""Organizations, users and memberships: who the caller is and what they may do."""
