"""CloudFormation stacks of the LeadCRM CDK app."""

from infra.stacks.leadcrm_stack import LeadCrmStack

__all__ = ["LeadCrmStack"]
