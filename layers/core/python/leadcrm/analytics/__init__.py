"""Reports: funnel and conversion analytics, attribution by campaign and channel, campaign spend."""
