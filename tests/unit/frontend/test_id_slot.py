"""A frontend's row ids carry the slot meta gave it (`frontend.main.set_id_slot`), at its first
registration and when it registers again (meta may then hand its old slot to another frontend)."""

from __future__ import annotations

import pytest

from frontend.handlers import dml
from frontend.main import _registered_again, set_id_slot
from meta.client import MetaSession


class FakeRpc:
    address = "http://meta"

    def __init__(self, infos: list[dict]) -> None:
        self.infos = infos
        self.asked: list[int] = []  # the slot each registration asked for

    def call(self, name: str, *args, **kwargs):
        assert name == "register"
        self.asked.append(args[5])
        return self.infos.pop(0)


@pytest.fixture(autouse=True)
def _playground_slot():
    yield
    set_id_slot(0)  # (as the playground's frontend, which the other tests of the process are)


def slot_of_new_ids() -> set[int]:
    return {dml.ROW_IDS.next_id() & 1023, dml.SEQUENCE.next_id() & 1023}


def test_ids_take_meta_slot_at_registration_and_again_after_it():
    session = MetaSession("http://127.0.0.1:1", "frontend", "http://fe")
    session.rpc = FakeRpc([{"node_id": 5, "object_store_url": "", "id_slot": 9},
                           {"node_id": 1030, "object_store_url": "", "id_slot": 12}])
    session.register()
    set_id_slot(session.id_slot)
    assert slot_of_new_ids() == {9}
    synced = []

    class Meta:
        def sync(self) -> None:
            synced.append(True)

    session.register()  # meta did not know this frontend any more: it asks for its slot again
    _registered_again(session, Meta())
    assert session.rpc.asked == [0, 9]
    assert slot_of_new_ids() == {12} and synced == [True]  # (meta gave another: the frontend takes it)


def test_a_meta_without_slots_gives_the_slot_of_the_node_id():
    session = MetaSession("http://127.0.0.1:1", "frontend", "http://fe")
    session.rpc = FakeRpc([{"node_id": 1025, "object_store_url": ""}])
    session.register()
    assert session.id_slot == 2
