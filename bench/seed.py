"""Seeds the benchmark database once, with set-based SQL (INSERT … SELECT generate_series).

One big organization plus many ordinary ones, with a realistic spread: two pipelines per organization
(Sales with one stage per category, Courses with four), secondary placements for some leads, tags,
campaigns, owners, archived and test leads, status history for every lead and activity for the big
organization. Leads are inserted in creation order across all organizations, as a live table fills, so the
big organization's rows are spread over the heap instead of packed together.

The whole seed is one transaction: an interrupted run leaves nothing behind and the next run starts over.
A `bench_meta` row marks a finished seed; a later run with the same scale reuses it.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Engine, text

from leadcrm.pipelines.rules.statuses import DEFAULT_PIPELINE_NAME, DEFAULT_STAGES


@dataclass(frozen=True)
class Scale:
    name: str
    total_leads: int
    big_org_leads: int
    leads_per_other_org: int
    big_org_staff: int = 20
    other_org_staff: int = 4

    @property
    def other_orgs(self) -> int:
        return (self.total_leads - self.big_org_leads) // self.leads_per_other_org


FULL = Scale("full", total_leads=1_000_000, big_org_leads=100_000, leads_per_other_org=5_000)
QUICK = Scale("quick", total_leads=100_000, big_org_leads=10_000, leads_per_other_org=5_000)

# Leads of the big organization that get a long history (more than the timeline shows) for the detail bench.
RICH_HISTORY_LEADS = 300
RICH_HISTORY_EVENTS = 150


@dataclass(frozen=True)
class Seeded:
    scale: str
    total_leads: int
    big_org_id: uuid.UUID
    seconds: float
    reused: bool


def seeded(engine: Engine, scale: Scale) -> Seeded | None:
    """The finished seed of this scale, if there is one."""
    with engine.connect() as conn:
        if not conn.execute(text("SELECT to_regclass('bench_meta') IS NOT NULL")).scalar_one():
            return None
        value = conn.execute(text("SELECT value FROM bench_meta WHERE key = 'seed'")).scalar_one_or_none()
    if value is None:
        return None
    meta = value if isinstance(value, dict) else json.loads(value)
    if meta["scale"] != scale.name:
        raise SystemExit(
            f"This database holds the {meta['scale']!r} bench seed, not {scale.name!r}: "
            "use another database (BENCH_DATABASE_URL) or drop this one."
        )
    return Seeded(
        scale=meta["scale"],
        total_leads=meta["total_leads"],
        big_org_id=uuid.UUID(meta["big_org_id"]),
        seconds=meta["seconds"],
        reused=True,
    )


def seed(engine: Engine, scale: Scale, log: Any = print) -> Seeded:
    """Seed (or reuse the seed of) this scale; prints each step's time."""
    existing = seeded(engine, scale)
    if existing is not None:
        log(f"seed: reusing the {scale.name} seed ({existing.total_leads:,} leads, seeded in {existing.seconds:.0f} s)")
        return existing
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(text("SELECT setseed(0.42)"))
        for title, block in _steps(scale):
            step_started = time.perf_counter()
            rows = 0
            for statement in (s for s in block.split(";") if s.strip()):
                result = conn.execute(text(_with_parameters(statement, scale)))
                if statement.lstrip().upper().startswith("INSERT") and result.rowcount > 0:
                    rows += result.rowcount
            count = f"{rows:,} rows" if rows else ""
            log(f"seed: {title:<40} {time.perf_counter() - step_started:7.1f} s  {count}")
        big_org_id = conn.execute(text("SELECT id FROM b_org WHERE idx = 0")).scalar_one()
        total = conn.execute(text("SELECT count(*) FROM leads")).scalar_one()
        seconds = time.perf_counter() - started
        conn.execute(text("CREATE TABLE IF NOT EXISTS bench_meta (key text PRIMARY KEY, value jsonb NOT NULL)"))
        meta = {**asdict(scale), "scale": scale.name, "total_leads": total, "big_org_id": str(big_org_id)}
        conn.execute(
            text("INSERT INTO bench_meta (key, value) VALUES ('seed', CAST(:value AS jsonb))"),
            {"value": json.dumps({**meta, "seconds": round(seconds, 1)})},
        )
    vacuum_started = time.perf_counter()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
    log(f"seed: {'VACUUM ANALYZE':<40} {time.perf_counter() - vacuum_started:7.1f} s")
    seconds = time.perf_counter() - started
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE bench_meta SET value = jsonb_set(value, '{seconds}', to_jsonb(CAST(:s AS numeric)))"),
            {"s": round(seconds, 1)},
        )
    log(f"seed: {scale.total_leads:,} leads seeded in {seconds:.1f} s")
    return Seeded(scale=scale.name, total_leads=total, big_org_id=big_org_id, seconds=seconds, reused=False)


ANALYTICS_TABLES = (
    "analytics_pending_batches",
    "analytics_lead_facts",
    "analytics_lead_stage_facts",
    "analytics_daily_funnel",
    "analytics_daily_stages",
    "analytics_daily_acquired",
)


def fold_rollups(engine: Engine, log: Any = print) -> None:
    """The report rollups of every lead the seed wrote (its statements' triggers queued them, as any writer's:
    analytics.rollup_queue), folded at once, so no measured report pays for the seed's writes."""
    started = time.perf_counter()
    with engine.begin() as conn:
        queued = conn.execute(
            text("SELECT coalesce(sum(cardinality(lead_ids)), 0) FROM analytics_pending_batches")
        ).scalar_one()
        if not queued:
            return
        conn.execute(
            text(
                "SELECT analytics_refresh_leads(ARRAY(SELECT DISTINCT unnest(lead_ids) FROM analytics_pending_batches))"
            )
        )
        conn.execute(text("DELETE FROM analytics_pending_batches"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"VACUUM (ANALYZE) {', '.join(ANALYTICS_TABLES)}"))
    log(f"seed: {'analytics rollups':<40} {time.perf_counter() - started:7.1f} s  {queued:,} leads")


def vacuum(engine: Engine, log: Any = print) -> None:
    """Clear what earlier runs left behind (a rolled-back bulk move leaves dead rows and index entries
    behind), so every run measures the same tables."""
    started = time.perf_counter()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM (ANALYZE) leads, lead_pipeline_placements, lead_status_events, lead_activity_events"))
    log(f"vacuum: {time.perf_counter() - started:.1f} s")


def _with_parameters(statement: str, scale: Scale) -> str:
    """The scale's numbers written into the SQL (integers only; utility statements take no bind params)."""
    for name, value in _parameters(scale).items():
        statement = statement.replace("{" + name + "}", str(int(value)))
    return statement


def _parameters(scale: Scale) -> dict[str, int]:
    return {
        "other_orgs": scale.other_orgs,
        "big_leads": scale.big_org_leads,
        "other_leads": scale.leads_per_other_org,
        "big_staff": scale.big_org_staff,
        "other_staff": scale.other_org_staff,
        "rich_leads": RICH_HISTORY_LEADS,
        "rich_events": RICH_HISTORY_EVENTS,
    }


def _words(text: str) -> list[str]:
    return text.split()


_SALES_STAGES = ", ".join(f"('{category.value}', '{name}', {i})" for i, (category, name) in enumerate(DEFAULT_STAGES))
_COURSES_STAGES = (
    "('new', 'Interested', 0), ('contacted', 'Talking', 1), ('customer', 'Enrolled', 2), ('lost', 'Dropped', 3)"
)
_FIRST_NAMES = _words(
    "Dana Noa Maya Tamar Yael Shira Lior Adi Roni Gal Omer Itai Yoni Amit Eitan Dor Ben Tom Ada Grace "
    "Alan Linus Sofia Lucas Emma Liam Olivia Noah Mia Elena Marco Ana Pedro Ines Hugo Lea Jonas Nina "
    "Felix Clara"
)
_LAST_NAMES = _words(
    "Cohen Levi Mizrahi Peretz Biton Friedman Katz Azulay Shapiro Dahan Lovelace Hopper Turing Torvalds "
    "Garcia Rossi Muller Silva Martin Bernard Dubois Novak Kowalski Jensen Larsen Smith Brown Wilson "
    "Taylor Moore"
)


def _array(words: list[str]) -> str:
    return "ARRAY[" + ", ".join(f"'{w}'" for w in words) + "]"


def _steps(scale: Scale) -> list[tuple[str, str]]:
    first, last = _array(_FIRST_NAMES), _array(_LAST_NAMES)
    return [
        (
            "organizations",
            """
            CREATE TEMP TABLE b_org ON COMMIT DROP AS
            SELECT g AS idx, gen_random_uuid() AS id,
                   CASE WHEN g = 0 THEN {big_leads} ELSE {other_leads} END AS n_leads,
                   CASE WHEN g = 0 THEN {big_staff} ELSE {other_staff} END AS n_staff
            FROM generate_series(0, {other_orgs}) AS g;
            INSERT INTO organizations (id, name, features)
            SELECT id, 'bench org ' || idx, '{"lead_management": true}'::jsonb FROM b_org;
            """,
        ),
        (
            "staff users and memberships",
            f"""
            CREATE TEMP TABLE b_staff ON COMMIT DROP AS
            SELECT o.idx AS org_idx, o.id AS org_id, s AS n, gen_random_uuid() AS user_id
            FROM b_org o CROSS JOIN LATERAL generate_series(0, o.n_staff - 1) AS s;
            INSERT INTO users (id, auth_subject, email, first_name, last_name)
            SELECT user_id, 'bench|' || org_idx || '|' || n, 'staff' || n || '.org' || org_idx || '@bench.test',
                   ({first})[1 + (n * 7 + org_idx) % {len(_FIRST_NAMES)}],
                   ({last})[1 + (n * 3 + org_idx) % {len(_LAST_NAMES)}]
            FROM b_staff;
            INSERT INTO memberships (id, organization_id, user_id, role, status)
            SELECT gen_random_uuid(), org_id, user_id,
                   CASE n WHEN 0 THEN 'owner' WHEN 1 THEN 'admin' ELSE 'coach' END, 'active'
            FROM b_staff;
            """,
        ),
        (
            "pipelines and stages",
            f"""
            CREATE TEMP TABLE b_pipeline ON COMMIT DROP AS
            SELECT o.idx AS org_idx, o.id AS org_id, k.kind, gen_random_uuid() AS id
            FROM b_org o CROSS JOIN (VALUES ('sales'), ('courses')) AS k(kind);
            INSERT INTO pipelines (id, organization_id, name, is_default)
            SELECT id, org_id, CASE kind WHEN 'sales' THEN '{DEFAULT_PIPELINE_NAME}' ELSE 'Courses' END,
                   kind = 'sales'
            FROM b_pipeline;
            CREATE TEMP TABLE b_stage ON COMMIT DROP AS
            SELECT p.org_idx, p.org_id, p.id AS pipeline_id, p.kind, s.category, s.name, s.position,
                   gen_random_uuid() AS id
            FROM b_pipeline p
            JOIN (SELECT 'sales' AS kind, * FROM (VALUES {_SALES_STAGES}) AS v(category, name, position)
                  UNION ALL
                  SELECT 'courses', * FROM (VALUES {_COURSES_STAGES}) AS v(category, name, position)) s
              ON s.kind = p.kind;
            CREATE UNIQUE INDEX ON b_stage (pipeline_id, category);
            INSERT INTO pipeline_stages (id, organization_id, pipeline_id, name, category, position)
            SELECT id, org_id, pipeline_id, name, category, position FROM b_stage;
            """,
        ),
        (
            "campaigns and tags",
            """
            CREATE TEMP TABLE b_campaign ON COMMIT DROP AS
            SELECT o.idx AS org_idx, o.id AS org_id, c AS n, gen_random_uuid() AS id
            FROM b_org o CROSS JOIN generate_series(0, 11) AS c;
            INSERT INTO lead_campaigns (id, organization_id, name, channel, external_ref)
            SELECT id, org_id, 'Campaign ' || n, (ARRAY['facebook', 'instagram', 'minisite', 'manual'])[1 + n % 4],
                   CASE WHEN n % 4 = 3 THEN NULL ELSE 'ref-' || n END
            FROM b_campaign;
            CREATE TEMP TABLE b_tag ON COMMIT DROP AS
            SELECT o.idx AS org_idx, o.id AS org_id, t AS n, gen_random_uuid() AS id
            FROM b_org o CROSS JOIN generate_series(0, 14) AS t;
            INSERT INTO lead_tags (id, organization_id, name, category)
            SELECT id, org_id, CASE WHEN n < 12 THEN 'Label ' || n ELSE 'Course ' || n END,
                   CASE WHEN n < 12 THEN 'label' ELSE 'purchase' END
            FROM b_tag;
            """,
        ),
        (
            "leads (random draws)",
            """
            CREATE TEMP TABLE b_draw ON COMMIT DROP AS
            SELECT o.idx AS org_idx, o.id AS org_id, o.n_staff, g AS n,
                   now() - random() * interval '730 days' AS created_at,
                   random() AS r_pipeline, random() AS r_status, random() AS r_touch, random() AS r_update,
                   random() AS r_name, random() AS r_email, random() AS r_phone, random() AS r_campaign,
                   random() AS r_owner, random() AS r_archived, random() AS r_test, random() AS r_source
            FROM b_org o CROSS JOIN LATERAL generate_series(1, o.n_leads) AS g;
            """,
        ),
        (
            "leads",
            f"""
            CREATE TEMP TABLE b_lead ON COMMIT DROP AS
            SELECT d.*,
                   CASE WHEN d.r_pipeline < 0.85 THEN 'sales' ELSE 'courses' END AS kind,
                   CASE WHEN d.r_pipeline < 0.85 THEN
                       CASE WHEN d.r_status < 0.15 THEN 'new' WHEN d.r_status < 0.30 THEN 'contacted'
                            WHEN d.r_status < 0.38 THEN 'callback' WHEN d.r_status < 0.44 THEN 'trial_booked'
                            WHEN d.r_status < 0.48 THEN 'no_show' WHEN d.r_status < 0.60 THEN 'converted'
                            WHEN d.r_status < 0.65 THEN 'customer' WHEN d.r_status < 0.95 THEN 'lost'
                            ELSE 'frozen' END
                   ELSE
                       CASE WHEN d.r_status < 0.30 THEN 'new' WHEN d.r_status < 0.55 THEN 'contacted'
                            WHEN d.r_status < 0.75 THEN 'customer' ELSE 'lost' END
                   END AS category,
                   (lpad(to_hex((extract(epoch FROM d.created_at) * 1000)::bigint), 12, '0') || '7'
                    || substr(md5(d.org_idx || '-' || d.n), 1, 3) || '8'
                    || substr(md5(d.n || '-' || d.org_idx), 1, 15))::uuid AS id
            FROM b_draw d;
            INSERT INTO leads (
                id, organization_id, name, email, phone, source, status, pipeline_id, stage_id, campaign_id,
                assigned_to_user_id, lost_reason, is_test, archived_at, converted_membership_id,
                status_changed_at, created_at, updated_at)
            SELECT l.id, l.org_id,
                   ({first})[1 + floor(l.r_name * {len(_FIRST_NAMES)})::int] || ' '
                     || ({last})[1 + floor(l.r_email * {len(_LAST_NAMES)})::int],
                   CASE WHEN l.r_email < 0.75 THEN
                       lower(({first})[1 + floor(l.r_name * {len(_FIRST_NAMES)})::int]) || '.'
                       || lower(({last})[1 + floor(l.r_email * {len(_LAST_NAMES)})::int]) || l.n
                       || (ARRAY['@gmail.com', '@walla.co.il', '@example.com', '@mail.test'])[1 + l.n % 4]
                   END,
                   CASE WHEN l.r_phone < 0.45
                        THEN '+9725' || lpad(floor(l.r_phone * 1e9)::bigint % 100000000 || '', 8, '0')
                        WHEN l.r_phone < 0.80
                        THEN '05' || (l.n % 10) || '-' || lpad(l.n % 10000000 || '', 7, '0')
                   END,
                   (ARRAY['minisite', 'facebook', 'instagram', 'whatsapp', 'manual', 'import', 'referral'])
                     [1 + floor(l.r_source * 7)::int],
                   l.category, s.pipeline_id, s.id,
                   CASE WHEN l.r_campaign < 0.6 THEN c.id END,
                   CASE WHEN l.r_owner < 0.7 THEN st.user_id END,
                   CASE WHEN l.category = 'lost'
                        THEN (ARRAY['no_answer', 'too_expensive', 'not_interested', 'moved'])[1 + l.n % 4] END,
                   l.r_test < 0.01,
                   CASE WHEN l.r_archived < 0.08 THEN l.created_at + (now() - l.created_at) * l.r_touch END,
                   NULL,
                   CASE WHEN l.category = 'new' THEN l.created_at
                        ELSE l.created_at + (now() - l.created_at) * l.r_touch END,
                   l.created_at,
                   l.created_at + (now() - l.created_at) * greatest(l.r_touch, l.r_update)
            FROM b_lead l
            JOIN b_stage s ON s.org_idx = l.org_idx AND s.kind = l.kind AND s.category = l.category
            JOIN b_campaign c ON c.org_idx = l.org_idx AND c.n = floor(l.r_campaign * 100)::int % 12
            JOIN b_staff st ON st.org_idx = l.org_idx AND st.n = floor(l.r_owner * 1000)::int % l.n_staff
            ORDER BY l.created_at;
            """,
        ),
        (
            "secondary placements",
            """
            INSERT INTO lead_pipeline_placements (id, organization_id, lead_id, pipeline_id, stage_id, created_at)
            SELECT gen_random_uuid(), l.org_id, l.id, s.pipeline_id, s.id, l.created_at
            FROM b_lead l
            JOIN b_stage s ON s.org_idx = l.org_idx AND s.kind <> l.kind
             AND s.category = CASE WHEN l.kind = 'sales'
                                   THEN (ARRAY['new', 'contacted', 'customer', 'lost'])[1 + l.n % 4]
                                   ELSE (ARRAY['new', 'contacted', 'trial_booked', 'lost'])[1 + l.n % 4] END
            WHERE l.r_update < 0.08;
            """,
        ),
        (
            "tag assignments",
            """
            INSERT INTO lead_tag_assignments (lead_id, tag_id, organization_id, created_at)
            SELECT l.id, t.id, l.org_id, l.created_at
            FROM b_lead l
            CROSS JOIN LATERAL (
                SELECT k, floor(15 * power(random(), 2))::int AS tag_n
                FROM generate_series(1, CASE WHEN l.r_source < 0.5 THEN 0 WHEN l.r_source < 0.8 THEN 1
                                             WHEN l.r_source < 0.95 THEN 2 ELSE 3 END) AS k) AS x
            JOIN b_tag t ON t.org_idx = l.org_idx AND t.n = x.tag_n
            ON CONFLICT DO NOTHING;
            """,
        ),
        (
            "status history",
            """
            INSERT INTO lead_status_events (id, organization_id, lead_id, from_status, to_status, to_stage_id,
                                            actor_user_id, changed_at)
            SELECT gen_random_uuid(), l.org_id, l.id, NULL, 'new', s.id, NULL, l.created_at
            FROM b_lead l JOIN b_stage s ON s.org_idx = l.org_idx AND s.kind = l.kind AND s.category = 'new';
            INSERT INTO lead_status_events (id, organization_id, lead_id, from_status, to_status, from_stage_id,
                                            to_stage_id, actor_user_id, changed_at)
            SELECT gen_random_uuid(), le.organization_id, le.id, 'new', le.status, s.id, le.stage_id,
                   le.assigned_to_user_id, le.status_changed_at
            FROM leads le
            JOIN pipeline_stages s ON s.pipeline_id = le.pipeline_id AND s.category = 'new'
            WHERE le.status <> 'new';
            """,
        ),
        (
            "activity (big organization)",
            """
            INSERT INTO lead_activity_events (id, organization_id, lead_id, type, payload, actor_user_id, occurred_at)
            SELECT gen_random_uuid(), l.org_id, l.id,
                   (ARRAY['note_added', 'stage_moved', 'owner_changed', 'email_sent'])[1 + (l.n + k) % 4],
                   jsonb_build_object('n', k), st.user_id,
                   l.created_at + (now() - l.created_at) * random()
            FROM b_lead l
            CROSS JOIN LATERAL generate_series(1, CASE WHEN l.n <= {rich_leads} THEN {rich_events}
                                                       ELSE (l.n % 5) END) AS k
            JOIN b_staff st ON st.org_idx = l.org_idx AND st.n = k % l.n_staff
            WHERE l.org_idx = 0;
            """,
        ),
    ]
