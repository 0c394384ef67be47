"""LeadCRM infrastructure.

- ``app.py``, ``stacks/``, ``leadcrm_constructs/``: the AWS CDK app, its stack and one construct per
  capability (synthesize with ``python infra/app.py``);
- ``local/``: the whole product on one machine for development and e2e tests (never deployed).
"""
