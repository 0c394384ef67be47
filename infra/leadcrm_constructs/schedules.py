"""Schedules: EventBridge Scheduler jobs run by the task_lifecycle function.

Each schedule invokes the function with ``{"job": "<name>"}``; the handler dispatches on ``job``.
Jobs are idempotent and frequent, so a missed or failed run is simply done by the next one: the
target does not retry, which would only pile stale runs on top of fresh ones.
"""

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as scheduler_targets
from cdk_nag import NagSuppressions
from constructs import Construct

OUTBOX_RELAY_JOB = "outbox_relay"
RETENTION_CLEANUP_JOB = "retention_cleanup"
DAILY_DIGEST_JOB = "daily_digest"
RESCORE_LEADS_JOB = "rescore_leads"
NURTURE_REEVALUATION_JOB = "nurture_reevaluation"
MERGE_SNAPSHOT_PURGE_JOB = "merge_snapshot_purge"
BULK_EMAIL_JOB = "bulk_email"
DEAL_ROTTING_SWEEP_JOB = "deal_rotting_sweep"
TICKET_SWEEP_JOB = "ticket_sweep"
QUEUED_EMAIL_SWEEP_JOB = "queued_email_sweep"
WEBHOOK_DELIVERY_SWEEP_JOB = "webhook_delivery_sweep"
ANALYTICS_FOLD_JOB = "analytics_fold"


class Schedules(Construct):
    """Scheduled jobs: the outbox relay every minute; the retention cleanup of growing tables (throttle
    counters among them: they are kept an hour) and the morning digest every 15 minutes (the digest job
    itself picks the organizations whose local morning it is); the deal rotting sweep every hour (thresholds
    are in days); rescoring after a scoring model change every 5 minutes; nurture re-evaluation and the merge
    snapshot purge hourly; the queued email sweep every 5 minutes; the webhook delivery sweep and the analytics
    fold (the leads writers queued, into the report rollups) every minute."""

    def __init__(self, scope: Construct, construct_id: str, *, task_lifecycle: lambda_.Function) -> None:
        super().__init__(scope, construct_id)
        self._task_lifecycle = task_lifecycle
        # One role for all jobs: Scheduler, for schedules of this account only, may invoke task_lifecycle.
        self.role = iam.Role(
            self,
            "InvokeRole",
            description="EventBridge Scheduler invokes the LeadCRM task_lifecycle function",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            ),
        )
        self.outbox_relay = self._job(
            "OutboxRelay",
            job=OUTBOX_RELAY_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(1)),
            description="Re-publish outbox events left behind after commit",
        )
        self.retention_cleanup = self._job(
            "RetentionCleanup",
            job=RETENTION_CLEANUP_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(15)),
            description="Delete rows past their retention: idempotency answers, throttle counters, webhook "
            "claims, published outbox rows",
        )
        self.daily_digest = self._job(
            "DailyDigest",
            job=DAILY_DIGEST_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(15)),
            description="Mail staff their urgent counts in their organization's morning (once a local day)",
        )
        self.rescore_leads = self._job(
            "RescoreLeads",
            job=RESCORE_LEADS_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(5)),
            description="Apply each organization's newest scoring model to its leads, in batches",
        )
        self.nurture_reevaluation = self._job(
            "NurtureReevaluation",
            job=NURTURE_REEVALUATION_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.hours(1)),
            description="Re-evaluate nurtured leads whose re-evaluation is due",
        )
        self.merge_snapshot_purge = self._job(
            "MergeSnapshotPurge",
            job=MERGE_SNAPSHOT_PURGE_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.hours(1)),
            description="Drop the undo snapshots (personal data) of merges past their 7-day undo window",
        )
        self.deal_rotting_sweep = self._job(
            "DealRottingSweep",
            job=DEAL_ROTTING_SWEEP_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.hours(1)),
            description="Stall deals idle beyond their stage's rotting threshold; alert and open a re-engagement task",
        )
        self.ticket_sweep = self._job(
            "TicketSweep",
            job=TICKET_SWEEP_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(1)),
            description="Escalate tickets near an SLA breach, record breaches, auto-close, send ticket mails",
        )
        self.bulk_email = self._job(
            "BulkEmail",
            job=BULK_EMAIL_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(1)),
            description="Send pending bulk email recipients within the SES sending rate",
        )
        self.queued_email_sweep = self._job(
            "QueuedEmailSweep",
            job=QUEUED_EMAIL_SWEEP_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(5)),
            description="Resolve conversation mail left queued by a send that died: retry once or mark unknown",
        )
        self.webhook_delivery_sweep = self._job(
            "WebhookDeliverySweep",
            job=WEBHOOK_DELIVERY_SWEEP_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(1)),
            description="Send outbound webhook deliveries that are due: retries after their backoff, lost leases",
        )
        self.analytics_fold = self._job(
            "AnalyticsFold",
            job=ANALYTICS_FOLD_JOB,
            every=scheduler.ScheduleExpression.rate(Duration.minutes(1)),
            description="Fold the leads writers queued into the funnel and attribution rollups",
        )
        # The digest, ticket mail and bulk email send through SES (their grant: EmailSending).

        # after the jobs: their grants create the role's policy, and suppressions reach existing children only
        NagSuppressions.add_resource_suppressions(
            self.role,
            [
                {
                    "id": "AwsSolutions-IAM5",
                    "reason": "grant_invoke allows lambda:InvokeFunction on the task_lifecycle function and its "
                    "qualified ARNs (versions and aliases, the ':*' suffix); no other function.",
                    "applies_to": [
                        {"regex": "/^Resource::<.*TaskLifecycle.*\\.Arn>:\\*$/"},
                    ],
                }
            ],
            apply_to_children=True,
        )

    def _job(
        self, construct_id: str, *, job: str, every: scheduler.ScheduleExpression, description: str
    ) -> scheduler.Schedule:
        return scheduler.Schedule(
            self,
            construct_id,
            schedule=every,
            description=description,
            target=scheduler_targets.LambdaInvoke(
                self._task_lifecycle,
                input=scheduler.ScheduleTargetInput.from_object({"job": job}),
                role=self.role,
                retry_attempts=0,
            ),
        )
