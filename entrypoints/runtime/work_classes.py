"""How each work class of the catalogue is built: its job and its worker.

Urgent work (notifications) and heavy work (exports) are separate durables with
separate, bounded pools (docs/background.md §33), so a pile of exports can never occupy
a notification's slot. A new work class is one more entry in the catalogue's
`WORK_CLASSES` and one here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import attrs
from nats.js import JetStreamContext

from adapters.nats.circuit_gate import PROBE_KEY, CircuitGate
from adapters.nats.dead_letters import Owner
from adapters.nats.heartbeat import HeartbeatWorker
from adapters.nats.worker import Job, Outage, RateLimit, Worker
from adapters.postgres.first_failures import FirstFailures
from adapters.postgres.provider_circuits import SqlProviderCircuit
from application.contracts.envelope import Envelope
from application.lesson_lookup import lesson_facts_from
from application.notifications import (
    Notifier,
    Outcome,
    RetryPolicy,
    request_for,
)
from application.ports import EmailProvider, ProviderCircuit
from application.purchase_lookup import purchase_facts_from
from entrypoints.config.catalogue import EXPORTS, NOTIFICATIONS, WORK_CLASSES
from entrypoints.config.container import Container
from entrypoints.config.settings import Settings
from entrypoints.runtime.exports_wiring import export_job, export_worker


@attrs.frozen(kw_only=True)
class WorkDeps:
    settings: Settings
    container: Container
    email: EmailProvider
    # One per process: the job records failures in it, the slots read it.
    email_circuit: SqlProviderCircuit = attrs.field(
        default=attrs.Factory(
            lambda deps: SqlProviderCircuit(
                deps.container.engine, "email", deps.settings.outage.circuit
            ),
            takes_self=True,
        )
    )


@attrs.frozen(kw_only=True)
class WorkWiring:
    job: Callable[[WorkDeps], Job]
    worker: Callable[[WorkDeps, JetStreamContext, Job, Owner], Worker]


# The urgent work class's slots: e-mails in flight at once.
NOTIFICATION_SLOTS = WORK_CLASSES[NOTIFICATIONS].slots


def notification_job(
    container: Container,
    provider: EmailProvider,
    policy: RetryPolicy | None = None,
    circuit: ProviderCircuit | None = None,
) -> Job:
    """The notifications worker's job: the event in, the recorded outcome out."""
    notifier = Notifier(
        circuit=circuit,
        store=container.notifications,
        provider=provider,
        students=container.students,
        lessons=lesson_facts_from(container.app),
        purchases=purchase_facts_from(container.app),
        policy=policy,
    )

    async def job(envelope: Envelope, replayed: bool) -> Outcome | None:
        request = request_for(envelope, replayed=replayed)
        if request is None:
            return None  # an event that asks for no e-mail: acked at once
        return await asyncio.to_thread(notifier.handle, request)

    return job


def _notification_worker(
    deps: WorkDeps, js: JetStreamContext, job: Job, owner: Owner
) -> Worker:
    # In-progress acks while a send (up to its 22 s deadline) or a wait for the
    # provider's rate runs: past ack_wait the broker would hand the message to a
    # second slot meanwhile, which finds `sending` and looks the outcome up.
    return HeartbeatWorker(
        name=NOTIFICATIONS,
        js=js,
        job=job,
        owner=owner,
        failures=FirstFailures(deps.container.engine),
        concurrency=NOTIFICATION_SLOTS,
        rate=RateLimit(deps.settings.email_rate_per_s),
        # One bound for every transient failure of an e-mail, ours or the provider's.
        outage=Outage(attempts=deps.settings.notify_max_attempts),
        ack_wait=deps.settings.ack_wait_seconds,
        gate=CircuitGate(deps.email_circuit, lambda: deps.email.status(PROBE_KEY)),
    )


WIRING: dict[str, WorkWiring] = {
    NOTIFICATIONS: WorkWiring(
        job=lambda deps: notification_job(
            deps.container,
            deps.email,
            RetryPolicy(
                max_attempts=deps.settings.notify_max_attempts,
                give_up_after=deps.settings.outage.give_up_after_s,
                provider_wait=deps.settings.outage.circuit.probe_every_s,
            ),
            deps.email_circuit,
        ),
        worker=_notification_worker,
    ),
    EXPORTS: WorkWiring(
        job=lambda deps: export_job(
            deps.container,
            deps.settings.data_dir,
            deps.settings.export_max_age_seconds,
        ),
        worker=lambda deps, js, job, owner: export_worker(
            js,
            job,
            owner,
            FirstFailures(deps.container.engine),
            ack_wait=deps.settings.ack_wait_seconds,
        ),
    ),
}
