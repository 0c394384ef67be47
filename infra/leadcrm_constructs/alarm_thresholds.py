"""Alarm thresholds, each with why it sits where it does (``Observability`` applies them; ``docs/runbook.md``
says what to do when one is crossed). Change a value here and the runbook's table with it.
"""

from __future__ import annotations

from aws_cdk import Duration

# The period of every metric unless an alarm says otherwise: long enough that one slow request or one
# retried message does not page, short enough that a broken deploy is seen within minutes.
PERIOD = Duration.minutes(5)

# HTTP API (what callers see). Both must hold for 15 minutes: a burst of 5xx during a deploy or a cold
# start wave is not an incident, a quarter of an hour of it is.
API_5XX_RATE = 0.05  # of requests, as cdk-monitoring-constructs computes the rate (5xx / count)
API_P99_LATENCY = Duration.seconds(3)  # the dashboard's reads are set-based and answer in well under 1 s
API_SUSTAINED_PERIODS = 3

# Functions: p99 duration above this share of the function's own timeout means invocations are about to
# time out (and, for the consumers, be retried and dead-lettered).
DURATION_PERCENT_OF_TIMEOUT = 80

# A message in a dead-letter queue is looked at within minutes, whatever the hour.
DLQ_PERIOD = Duration.minutes(1)

# Work queues: a message that fails is received again after the visibility timeout, up to
# MAX_RECEIVE_COUNT times, then dead-lettered. So a healthy queue's oldest message is younger than
# receives × visibility timeout; older means the consumer is not keeping up or not running at all.
QUEUE_AGE_MARGIN = Duration.minutes(5)


def oldest_message_age_seconds(visibility_timeout: Duration, max_receive_count: int) -> int:
    return int(max_receive_count * visibility_timeout.to_seconds() + QUEUE_AGE_MARGIN.to_seconds())


# Outbox: the relay runs every minute and leaves events younger than 30 s to the request that wrote them,
# so a healthy backlog is under about 90 s. Five minutes for two periods running is a bus that refuses
# events, a relay that fails, or one that stopped.
OUTBOX_NAMESPACE = "LeadCRM"
OUTBOX_BACKLOG_AGE_METRIC = "OutboxOldestUnpublishedAgeSeconds"  # leadcrm.platform.outbox.BACKLOG_AGE_METRIC
OUTBOX_BACKLOG_AGE = Duration.minutes(5)
OUTBOX_SUSTAINED_PERIODS = 2

# Aurora Serverless v2: sustained for 15 minutes, because capacity and CPU rise with every burst by design.
DATABASE_SUSTAINED_PERIODS = 3
ACU_FRACTION_OF_MAX = 0.9  # near the maximum ACU, it cannot scale further: queries queue instead
DATABASE_CPU_PERCENT = 80

# Aurora PostgreSQL sets max_connections from the instance's memory, LEAST(memory / 9531392, 5000) with
# memory in bytes; a Serverless v2 writer takes it from its maximum ACU (about 2 GiB each). The real value is
# a little lower (the engine's memory excludes what the host keeps), so the alarm sits at 75% of the
# estimate: `SHOW max_connections` on the writer gives the exact figure.
CONNECTIONS_FRACTION_OF_MAX = 0.75
_BYTES_PER_ACU = 2 * 1024**3
_BYTES_PER_CONNECTION = 9_531_392
_CONNECTIONS_CAP = 5000


def estimated_max_connections(max_capacity: float) -> int:
    return min(int(max_capacity * _BYTES_PER_ACU / _BYTES_PER_CONNECTION), _CONNECTIONS_CAP)


def connection_alarm_threshold(max_capacity: float) -> int:
    return int(CONNECTIONS_FRACTION_OF_MAX * estimated_max_connections(max_capacity))


# SES: the account's reputation rates (fractions). SES puts an account under review at 5% bounces or 0.1%
# complaints, and may pause its sending at 10% / 0.5%: for every organization at once. Alarm at review level.
SES_BOUNCE_RATE = 0.05
SES_COMPLAINT_RATE = 0.001
SES_PERIOD = Duration.minutes(15)  # SES publishes these rates a few times an hour, not every minute
