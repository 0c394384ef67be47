"""LeadCRM core layer: domain rules, database access, services and AWS adapters shared by every function."""
