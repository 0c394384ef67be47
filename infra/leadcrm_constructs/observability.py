"""Observability: the service's CloudWatch dashboard and every alarm that needs a person.

Built with cdk-monitoring-constructs (``MonitoringFacade``): each ``monitor_*`` call draws a section of the
one dashboard and creates that section's alarms through the facade's alarm factory, whose default action
notifies the ``AlarmTopic`` on ALARM and again on OK. So no alarm can be created here without an action
(``tests/infra/platform/test_infra_observability.py`` checks every alarm of the template).

What alarms, and why at that level (thresholds are in ``infra/leadcrm_constructs/alarm_thresholds.py``;
what to do about each alarm is ``docs/runbook.md``):

- every function: any error, any throttle, p99 duration above 80% of its timeout (it is about to time out);
- the HTTP API: the 5xx rate and the p99 latency API Gateway measures (what callers see);
- each work queue: the age of its oldest message (the consumer is not keeping up, or not running) and any
  message in its dead-letter queue (a lead or an event we failed to process);
- the outbox: the age of the oldest unpublished event, a metric the relay publishes every minute
  (``leadcrm.platform.outbox``); no data counts as breaching, because a relay that stops reporting has
  stopped relaying;
- Aurora: capacity near its maximum ACU, CPU, connections near ``max_connections``;
- RDS Proxy: clients refused (IAM token or TLS) and connections the proxy failed to open to the cluster;
- SES: the account's bounce and complaint rates, before SES reviews or pauses sending.

RDS Proxy, SES reputation and the outbox have no ``monitor_*`` of their own in the library: they are
``monitor_custom`` sections, which still draw on the dashboard and alarm through the same factory.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from cdk_monitoring_constructs import (
    AlarmFactoryDefaults,
    CustomMetricGroup,
    CustomMetricWithAlarm,
    CustomThreshold,
    DefaultDashboardFactory,
    ErrorCountThreshold,
    ErrorRateThreshold,
    HighConnectionCountThreshold,
    LatencyThreshold,
    LatencyTimeoutPercentageThreshold,
    MaxMessageAgeThreshold,
    MaxMessageCountThreshold,
    MetricFactoryDefaults,
    MonitoringFacade,
    SnsAlarmActionStrategy,
    UsageCountThreshold,
    UsageThreshold,
)
from constructs import Construct

from infra.leadcrm_constructs import alarm_thresholds as limits
from infra.leadcrm_constructs.alarm_topic import AlarmTopic
from infra.leadcrm_constructs.database import Database
from infra.leadcrm_constructs.functions import POWERTOOLS_ENVIRONMENT, LambdaFunctions
from infra.leadcrm_constructs.messaging import MAX_RECEIVE_COUNT, WorkQueue

RUNBOOK = "docs/runbook.md"
GREATER = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
NOT_BREACHING = cloudwatch.TreatMissingData.NOT_BREACHING


def about(description: str, runbook_section: str) -> dict[str, str]:
    """What the notification says, and the runbook section it points the person it wakes to."""
    return {"alarm_description_override": description, "runbook_link": f"{RUNBOOK}#{runbook_section}"}


class Observability(Construct):
    """The dashboard and the alarms of the whole service, all notifying ``topic``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        topic: AlarmTopic,
        functions: LambdaFunctions,
        http_api: apigwv2.HttpApi,
        work_queues: list[WorkQueue],
        database: Database,
    ) -> None:
        super().__init__(scope, construct_id)
        stack_name = Stack.of(self).stack_name
        self.facade = MonitoringFacade(
            self,
            "Monitoring",
            alarm_factory_defaults=AlarmFactoryDefaults(
                actions_enabled=True,
                alarm_name_prefix=stack_name,
                action=SnsAlarmActionStrategy(on_alarm_topic=topic.topic, on_ok_topic=topic.topic),
                # one breaching period unless an alarm says otherwise (each threshold below does)
                datapoints_to_alarm=1,
                evaluation_periods=1,
            ),
            metric_factory_defaults=MetricFactoryDefaults(period=limits.PERIOD),
            dashboard_factory=DefaultDashboardFactory(
                self,
                "Dashboards",
                dashboard_name_prefix=stack_name,
                create_dashboard=True,
                create_summary_dashboard=False,
                create_alarm_dashboard=False,
            ),
        )
        self.facade.add_large_header(f"LeadCRM ({stack_name}): what each alarm means is in {RUNBOOK}")

        self._api(http_api)
        self._functions(functions)
        self._queues(work_queues)
        self._outbox()
        self._database(database)
        self._email()

    @property
    def dashboard(self) -> cloudwatch.Dashboard | None:
        return self.facade.created_dashboard()

    def _api(self, http_api: apigwv2.HttpApi) -> None:
        self.facade.add_medium_header("HTTP API")
        self.facade.monitor_api_gateway_v2_http_api(
            api=http_api,
            alarm_friendly_name="HttpApi",
            human_readable_name="HTTP API (API Gateway, $default stage)",
            add5xx_rate_alarm={
                "5xxRate": ErrorRateThreshold(
                    max_error_rate=limits.API_5XX_RATE,
                    datapoints_to_alarm=limits.API_SUSTAINED_PERIODS,
                    evaluation_periods=limits.API_SUSTAINED_PERIODS,
                    **about(
                        f"Over {limits.API_5XX_RATE:.0%} of HTTP API requests answered 5xx for "
                        f"{_minutes(limits.API_SUSTAINED_PERIODS)} minutes.",
                        "api-5xx-rate",
                    ),
                )
            },
            add_latency_p99_alarm={
                "P99Latency": LatencyThreshold(
                    max_latency=limits.API_P99_LATENCY,
                    datapoints_to_alarm=limits.API_SUSTAINED_PERIODS,
                    evaluation_periods=limits.API_SUSTAINED_PERIODS,
                    **about(
                        f"HTTP API p99 latency above {limits.API_P99_LATENCY.to_seconds()} s for "
                        f"{_minutes(limits.API_SUSTAINED_PERIODS)} minutes.",
                        "api-p99-latency",
                    ),
                )
            },
        )

    def _functions(self, functions: LambdaFunctions) -> None:
        self.facade.add_medium_header("Functions")
        for function in functions.all:
            name = function.node.id
            self.facade.monitor_lambda_function(
                lambda_function=function,
                alarm_friendly_name=name,
                human_readable_name=f"{name} function",
                is_iterator=False,
                add_fault_count_alarm={
                    "Errors": ErrorCountThreshold(
                        max_error_count=0, **about(f"The {name} function raised errors.", "function-errors")
                    )
                },
                add_throttles_count_alarm={
                    "Throttles": ErrorCountThreshold(
                        max_error_count=0, **about(f"The {name} function was throttled.", "function-throttles")
                    )
                },
                add_latency_p99_alarm={
                    "NearTimeout": LatencyTimeoutPercentageThreshold(
                        max_latency_percentage_of_timeout=limits.DURATION_PERCENT_OF_TIMEOUT,
                        **about(
                            f"The {name} function's p99 duration passed {limits.DURATION_PERCENT_OF_TIMEOUT}% "
                            "of its timeout.",
                            "function-duration-near-timeout",
                        ),
                    )
                },
            )

    def _queues(self, work_queues: list[WorkQueue]) -> None:
        self.facade.add_medium_header("Work queues")
        for work_queue in work_queues:
            name = work_queue.node.id
            self.facade.monitor_sqs_queue_with_dlq(
                queue=work_queue.queue,
                dead_letter_queue=work_queue.dead_letter_queue,
                alarm_friendly_name=f"{name}Queue",
                human_readable_name=f"{name} queue",
                add_queue_max_message_age_alarm={
                    "OldestMessageAge": MaxMessageAgeThreshold(
                        max_age_in_seconds=limits.oldest_message_age_seconds(
                            work_queue.visibility_timeout, MAX_RECEIVE_COUNT
                        ),
                        **about(
                            f"The oldest message on the {name} queue is older than its retries take: "
                            "its consumer is not keeping up, or not running.",
                            "queue-oldest-message-age",
                        ),
                        treat_missing_data_override=NOT_BREACHING,  # SQS stops reporting idle queues
                    )
                },
                add_dead_letter_queue_max_size_alarm={
                    "DlqNotEmpty": MaxMessageCountThreshold(
                        max_message_count=0,
                        period=limits.DLQ_PERIOD,
                        treat_missing_data_override=NOT_BREACHING,  # SQS stops reporting idle queues
                        **about(
                            f"Messages in the {name} dead-letter queue: inspect, fix, then redrive.",
                            "dead-letter-queue-not-empty",
                        ),
                    )
                },
            )

    def _outbox(self) -> None:
        self.facade.add_medium_header("Outbox")
        backlog_age = cloudwatch.Metric(
            namespace=limits.OUTBOX_NAMESPACE,
            metric_name=limits.OUTBOX_BACKLOG_AGE_METRIC,
            # Powertools adds the service as a dimension of every metric it emits
            dimensions_map={"service": POWERTOOLS_ENVIRONMENT["POWERTOOLS_SERVICE_NAME"]},
            statistic=cloudwatch.Stats.MAXIMUM,
            period=limits.PERIOD,
            label="oldest unpublished event (s)",
        )
        self.facade.monitor_custom(
            alarm_friendly_name="Outbox",
            human_readable_name="Outbox relay",
            description="How long the oldest event not yet on the bus has waited; the relay reports it every run.",
            metric_groups=[
                CustomMetricGroup(
                    title="Oldest unpublished event",
                    metrics=[
                        CustomMetricWithAlarm(
                            metric=backlog_age,
                            alarm_friendly_name="BacklogAge",
                            add_alarm={
                                "BacklogAge": CustomThreshold(
                                    threshold=limits.OUTBOX_BACKLOG_AGE.to_seconds(),
                                    comparison_operator=GREATER,
                                    datapoints_to_alarm=limits.OUTBOX_SUSTAINED_PERIODS,
                                    evaluation_periods=limits.OUTBOX_SUSTAINED_PERIODS,
                                    # the relay reports every minute: silence means it stopped relaying
                                    treat_missing_data_override=cloudwatch.TreatMissingData.BREACHING,
                                    **about(
                                        "An outbox event has waited over "
                                        f"{limits.OUTBOX_BACKLOG_AGE.to_minutes()} minutes for the bus "
                                        "(or the relay stopped reporting): consumers are not being told.",
                                        "outbox-backlog-age",
                                    ),
                                )
                            },
                        )
                    ],
                )
            ],
        )

    def _database(self, database: Database) -> None:
        self.facade.add_medium_header("Database")
        self.facade.monitor_aurora_cluster(
            cluster=database.cluster,
            alarm_friendly_name="Aurora",
            human_readable_name="Aurora PostgreSQL (Serverless v2)",
            add_max_serverless_database_capacity_alarm={
                "NearMaxCapacity": UsageCountThreshold(
                    max_usage_count=limits.ACU_FRACTION_OF_MAX * database.max_capacity,
                    datapoints_to_alarm=limits.DATABASE_SUSTAINED_PERIODS,
                    evaluation_periods=limits.DATABASE_SUSTAINED_PERIODS,
                    **about(
                        f"The Aurora writer ran above {limits.ACU_FRACTION_OF_MAX:.0%} of its {database.max_capacity} "
                        f"ACU maximum for {_minutes(limits.DATABASE_SUSTAINED_PERIODS)} minutes.",
                        "aurora-capacity-near-maximum",
                    ),
                )
            },
            add_cpu_usage_alarm={
                "Cpu": UsageThreshold(
                    max_usage_percent=limits.DATABASE_CPU_PERCENT,
                    datapoints_to_alarm=limits.DATABASE_SUSTAINED_PERIODS,
                    evaluation_periods=limits.DATABASE_SUSTAINED_PERIODS,
                    **about(
                        f"Aurora CPU above {limits.DATABASE_CPU_PERCENT}% for "
                        f"{_minutes(limits.DATABASE_SUSTAINED_PERIODS)} minutes.",
                        "aurora-cpu",
                    ),
                )
            },
            add_max_connection_count_alarm={
                "Connections": HighConnectionCountThreshold(
                    max_connection_count=limits.connection_alarm_threshold(database.max_capacity),
                    **about(
                        f"Aurora connections above {limits.connection_alarm_threshold(database.max_capacity)}, "
                        f"near the ~{limits.estimated_max_connections(database.max_capacity)} max_connections "
                        f"of {database.max_capacity} ACU: new connections are about to be refused.",
                        "aurora-connections",
                    ),
                )
            },
        )
        proxy_name = database.proxy.db_proxy_name
        self.facade.monitor_custom(
            alarm_friendly_name="RdsProxy",
            human_readable_name="RDS Proxy",
            description="Connections the proxy refused (client IAM token or TLS) or could not open to the cluster.",
            metric_groups=[
                CustomMetricGroup(
                    title="Connection failures",
                    metrics=[
                        self._count_alarm(
                            _rds_proxy_metric(proxy_name, "ClientConnectionsSetupFailedAuth", "client refused"),
                            "ClientAuthFailures",
                            "RDS Proxy refused client connections (IAM auth token or TLS).",
                        ),
                        self._count_alarm(
                            _rds_proxy_metric(proxy_name, "DatabaseConnectionsSetupFailed", "cluster unreachable"),
                            "DatabaseConnectionFailures",
                            "RDS Proxy could not open connections to the Aurora cluster.",
                        ),
                    ],
                )
            ],
        )

    def _email(self) -> None:
        self.facade.add_medium_header("Email (SES)")
        self.facade.monitor_custom(
            alarm_friendly_name="Ses",
            human_readable_name="SES sending reputation (account)",
            description="SES reviews an account at 5% bounces or 0.1% complaints, and may pause it at 10% / 0.5%.",
            metric_groups=[
                CustomMetricGroup(
                    title="Reputation",
                    metrics=[
                        self._rate_alarm(
                            _ses_reputation_metric("Reputation.BounceRate", "bounce rate"),
                            "BounceRate",
                            limits.SES_BOUNCE_RATE,
                            f"The SES account's bounce rate reached {limits.SES_BOUNCE_RATE:.0%}: under review.",
                            "ses-bounce-rate",
                        ),
                        self._rate_alarm(
                            _ses_reputation_metric("Reputation.ComplaintRate", "complaint rate"),
                            "ComplaintRate",
                            limits.SES_COMPLAINT_RATE,
                            f"The SES account's complaint rate reached {limits.SES_COMPLAINT_RATE:.1%}: under review.",
                            "ses-complaint-rate",
                        ),
                    ],
                )
            ],
        )

    @staticmethod
    def _count_alarm(metric: cloudwatch.Metric, name: str, description: str) -> CustomMetricWithAlarm:
        return CustomMetricWithAlarm(
            metric=metric,
            alarm_friendly_name=name,
            add_alarm={
                name: CustomThreshold(
                    threshold=0,
                    comparison_operator=GREATER,
                    treat_missing_data_override=NOT_BREACHING,
                    **about(description, "rds-proxy-connection-errors"),
                )
            },
        )

    @staticmethod
    def _rate_alarm(
        metric: cloudwatch.Metric, name: str, threshold: float, description: str, section: str
    ) -> CustomMetricWithAlarm:
        return CustomMetricWithAlarm(
            metric=metric,
            alarm_friendly_name=name,
            add_alarm={
                name: CustomThreshold(
                    threshold=threshold,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                    # no mail sent, no rate published: nothing to worry about
                    treat_missing_data_override=NOT_BREACHING,
                    **about(description, section),
                )
            },
        )


def _minutes(periods: int) -> int:
    return int(periods * limits.PERIOD.to_minutes())


def _rds_proxy_metric(proxy_name: str, metric_name: str, label: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/RDS",
        metric_name=metric_name,
        dimensions_map={"ProxyName": proxy_name},
        statistic=cloudwatch.Stats.SUM,
        period=limits.PERIOD,
        label=label,
    )


def _ses_reputation_metric(metric_name: str, label: str) -> cloudwatch.Metric:
    """An account-wide reputation rate (a fraction: 0.05 is 5%), what SES itself judges the account by."""
    return cloudwatch.Metric(
        namespace="AWS/SES",
        metric_name=metric_name,
        statistic=cloudwatch.Stats.MAXIMUM,
        period=limits.SES_PERIOD,
        label=label,
    )
