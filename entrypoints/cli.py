"""The `club` command line (CONTRACT §3)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from adapters.crash import check_crash_setting
from adapters.nats.streams import connect
from entrypoints import bootstrap
from entrypoints.settings import ConfigError, Settings


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        check_crash_setting()
        settings = Settings.from_env()
        return int(args.run(settings, args) or 0)
    except (ConfigError, ValueError) as e:
        print(f"club: {e}", file=sys.stderr)
        return 2


def _up(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.supervisor import up

    return up(settings)


def _migrate(settings: Settings, _: argparse.Namespace) -> int:
    database_url, nats_url = settings.require_services()
    bootstrap.migrate_database(database_url)

    async def broker() -> None:
        nc = await connect(nats_url, name="club-migrate")
        try:
            await bootstrap.migrate_broker(nc.jetstream())
        finally:
            await nc.close()

    asyncio.run(broker())
    print("club: database and streams are up to date")
    return 0


def _api(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.roles import run_api

    run_api(settings)
    return 0


def _relay(settings: Settings, _: argparse.Namespace) -> int:
    from entrypoints.roles import run_relay

    run_relay(settings)
    return 0


def _projector(settings: Settings, args: argparse.Namespace) -> int:
    from entrypoints.roles import run_projector

    run_projector(settings, args.name)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="club", description=__doc__)
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    sub.add_parser("up", help="every role in one supervised process tree").set_defaults(
        run=_up
    )
    sub.add_parser("migrate", help="tables, streams and consumers").set_defaults(
        run=_migrate
    )
    sub.add_parser("api", help="the HTTP API").set_defaults(run=_api)
    sub.add_parser("relay", help="outbox -> JetStream").set_defaults(run=_relay)
    projector = sub.add_parser("projector", help="one read-model projection")
    projector.add_argument("name", choices=sorted(bootstrap.PROJECTIONS))
    projector.set_defaults(run=_projector)
    return parser


if __name__ == "__main__":
    sys.exit(main())
