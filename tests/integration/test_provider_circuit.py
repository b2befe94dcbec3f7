"""The provider circuit's row, shared by worker processes: each instance here
stands for one process (an engine of its own), as `club worker notifications`
builds it. Failures from either count towards one circuit; of many slots racing
for a due probe exactly one wins, on the database's clock; an answer seen by
either closes it for both. (Real worker processes sharing it through an outage:
tests/faults/test_provider_outage.py.)"""

from __future__ import annotations

import asyncio
import threading
from uuid import uuid4

import sqlalchemy as sa
from prometheus_client import REGISTRY

from adapters.nats.circuit_gate import CircuitGate
from adapters.postgres.provider_circuits import SqlProviderCircuit
from adapters.postgres.tables import provider_circuits
from application.email import TransientSendError
from application.provider_circuit import CircuitPolicy

POLICY = CircuitPolicy(failures_to_open=3, probe_every_s=30)


def two_processes(container_for, migrated) -> tuple[SqlProviderCircuit, ...]:
    provider = f"email-{uuid4().hex[:8]}"
    return tuple(
        SqlProviderCircuit(container_for(migrated[0]).engine, provider, POLICY)
        for _ in range(2)
    )


def test_failures_in_two_processes_open_one_circuit_that_both_see(
    container_for, migrated
) -> None:
    one, two = two_processes(container_for, migrated)
    assert one.failed("503") is False
    assert two.failed("503") is False
    assert one.failed("503") is True  # the third in a row, whoever saw it
    assert two.view(max_age_s=0).state.open
    assert two.failed("503") is True  # a message in hand: its attempt given back


def test_of_many_slots_racing_for_a_due_probe_exactly_one_probes(
    container_for, migrated
) -> None:
    one, two = two_processes(container_for, migrated)
    for _ in range(3):
        one.failed("503")
    make_probe_due(container_for, migrated, one.provider)
    won: list[bool] = []
    start = threading.Barrier(16)

    def slot(circuit: SqlProviderCircuit) -> None:
        start.wait()
        won.append(circuit.claim_probe())

    threads = [
        threading.Thread(target=slot, args=(circuit,))
        for circuit in (one, two)
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert won.count(True) == 1
    # The next one is a whole interval away, judged by the database's clock.
    view = two.view(max_age_s=0)
    assert view.state.next_probe_at is not None
    assert (view.state.next_probe_at - view.now).total_seconds() > 25
    assert one.claim_probe() is False


def test_an_answer_in_either_process_closes_it_for_both(
    container_for, migrated
) -> None:
    one, two = two_processes(container_for, migrated)
    for _ in range(3):
        two.failed("503")
    assert one.view(max_age_s=0).state.open
    one.probed(None)
    assert not two.view(max_age_s=0).state.open
    assert two.view(max_age_s=0).state.failures == 0


def test_a_slot_takes_nothing_while_open_probes_when_due_and_says_so_in_metrics(
    container_for, migrated
) -> None:
    one, two = two_processes(container_for, migrated)
    for _ in range(3):
        one.failed("503")
    answers: list[str] = []

    def probe() -> None:
        answers.append("asked")
        if len(answers) == 1:
            raise TransientSendError("provider answered 503: down")

    gate = CircuitGate(two, probe)
    label = {"provider": two.provider}

    def admits() -> bool:
        async def once() -> bool:
            return await gate.admits(asyncio.Event())

        return asyncio.run(once())

    assert admits() is False  # open, no probe due yet
    assert answers == []
    assert REGISTRY.get_sample_value("club_provider_circuit_open", label) == 1
    assert REGISTRY.get_sample_value("club_provider_circuit_open_seconds", label) >= 0
    make_probe_due(container_for, migrated, two.provider)
    assert admits() is False  # probed: still down
    assert answers == ["asked"]
    make_probe_due(container_for, migrated, two.provider)
    assert admits() is True  # probed: it answered, the circuit closed
    assert REGISTRY.get_sample_value("club_provider_circuit_open", label) == 0
    assert not one.view(max_age_s=0).state.open
    probes = {"provider": two.provider, "outcome": "failed"}
    assert REGISTRY.get_sample_value("club_provider_probes_total", probes) == 1


def make_probe_due(container_for, migrated, provider: str) -> None:
    with container_for(migrated[0]).engine.begin() as conn:
        conn.execute(
            sa.update(provider_circuits)
            .where(provider_circuits.c.provider == provider)
            .values(next_probe_at=sa.func.now())
        )
