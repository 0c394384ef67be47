"""Observability: CloudWatch alarms on what needs a human.

- a message in any dead-letter queue (a lead or an event we failed to process);
- any error or throttle of any function.

Alarms have no actions yet: where they notify (SNS, chat, paging) is decided with the rest of the
deployment. ``alarms`` lists them so that a later construct can attach one action to all.
"""

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.leadcrm_constructs.messaging import WorkQueue

PERIOD = Duration.minutes(5)


class Observability(Construct):
    """DLQ depth alarms and per-function error and throttle alarms."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Sequence[lambda_.Function],
        work_queues: Sequence[WorkQueue],
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cloudwatch.Alarm] = []

        for work_queue in work_queues:
            name = work_queue.node.id
            self._above_zero(
                f"{name}DlqNotEmpty",
                work_queue.dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=Duration.minutes(1), statistic=cloudwatch.Stats.MAXIMUM
                ),
                f"Messages in the {name} dead-letter queue: inspect, fix, then redrive",
            )

        for function in functions:
            name = function.node.id
            self._above_zero(
                f"{name}Errors",
                function.metric_errors(period=PERIOD, statistic=cloudwatch.Stats.SUM),
                f"The {name} function raised errors",
            )
            self._above_zero(
                f"{name}Throttles",
                function.metric_throttles(period=PERIOD, statistic=cloudwatch.Stats.SUM),
                f"The {name} function was throttled",
            )

    def _above_zero(self, construct_id: str, metric: cloudwatch.Metric, description: str) -> None:
        self.alarms.append(
            metric.create_alarm(
                self,
                construct_id,
                alarm_description=description,
                threshold=0,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
