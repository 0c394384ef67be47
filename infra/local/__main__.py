"""`make dev`: python -m infra.local [--port 8000] [--data-dir .local] [--concurrency api=4,…]"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from infra.local.containers import DEFAULT_CONCURRENCY, ConcurrencyRefused, parse_concurrency
from infra.local.stack import LOCAL_META_VERIFY_TOKEN, LocalStack


def main() -> None:
    parser = argparse.ArgumentParser(description="Run LeadCRM on this machine.")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--data-dir", type=Path, default=Path(".local"), help="where PostgreSQL and keys live")
    parser.add_argument("--cors-origin", default="*", help="the dashboard origin allowed by CORS")
    parser.add_argument("--quiet", action="store_true", help="no access log")
    defaults = ",".join(f"{name}={limit}" for name, limit in DEFAULT_CONCURRENCY.items())
    parser.add_argument(
        "--concurrency",
        default=os.environ.get("LOCAL_CONCURRENCY", ""),
        help="warm containers each function may run at once: N for every function and/or function=N,… "
        f"(env LOCAL_CONCURRENCY; default {defaults})",
    )
    args = parser.parse_args()
    try:
        concurrency = parse_concurrency(args.concurrency)
    except ConcurrencyRefused as refused:
        parser.error(str(refused))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for noisy in ("werkzeug", "botocore", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    stack = LocalStack(args.data_dir.resolve(), args.port, args.cors_origin, concurrency)
    stack.start()
    stack.server.quiet = args.quiet  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=stack.server.shutdown).start())
    demo = stack.demo_organization()  # while the functions' first containers start
    stack.wait_until_warm()
    _print_banner(stack, demo)
    try:
        stack.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()


def _print_banner(stack: LocalStack, demo: dict[str, Any]) -> None:
    base = f"http://127.0.0.1:{stack.port}"
    org, coach = demo["organizationId"], demo["users"]["coach"]["token"]
    lines = [
        f"LeadCRM local stack on {base}  (OpenAPI: {base}/openapi.json, Swagger UI: {base}/docs)",
        f"Demo organization {org}",
        *(f"  {role:<6} userId={u['userId']}\n         token={u['token']}" for role, u in demo["users"].items()),
        f"Sign-in: issuer {stack.authority.issuer} (JWKS and discovery under {stack.authority.issuer}/.well-known/); "
        f'POST {base}/_local/tokens {{"sub": <authSubject>}} mints a token',
        f"Webhook verify token: {LOCAL_META_VERIFY_TOKEN} (app secret: env META_APP_SECRET, default local-app-secret)",
        "Try:",
        f"  curl -s -X POST {base}/organizations/{org}/leads -H 'authorization: Bearer {coach}' "
        '-H \'content-type: application/json\' -d \'{"name": "Dana Cohen", "email": "dana@example.com"}\'',
        "READY",
    ]
    print("\n".join(lines), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
