"""The claim is atomic across threads, connections and processes sharing one database
(a SQLite file or a PostgreSQL server)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.store import ActionRecord, Store
from bot.store.action_rows import claim_action, insert_action
from bot.store.engines import connect

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]

_CHILD = """
import json, random, sys, threading, time
from datetime import UTC, datetime
from pathlib import Path
from bot.store.action_rows import claim_action, insert_action
from bot.store.engines import connect

path, go, replica = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
n_actions, n_threads = int(sys.argv[4]), int(sys.argv[5])
wins, lock = [], threading.Lock()
barrier = threading.Barrier(n_threads)

def work(i):
    conn = connect(path, migrate=False)  # one connection per thread, opened in it
    order = list(range(n_actions))
    random.shuffle(order)
    barrier.wait()
    for a in order:
        if claim_action(conn, f"A{a}", f"{replica}-{i}", at=datetime.now(UTC)):
            with lock:
                wins.append(a)
    conn.close()

print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(wins), flush=True)
"""


def action(action_id: str) -> ActionRecord:
    return ActionRecord(
        action_id=action_id,
        tier=2,
        requester="U1",
        created_at=T0,
        updated_at=T0,
        cluster=DEFAULT_CLUSTER,
    )


def _prepare(path: str, count: int) -> None:
    conn = connect(path)
    for i in range(count):
        insert_action(conn, action(f"A{i}"))
    conn.close()


def test_exactly_one_of_100_threads_with_their_own_connections_wins(target: str) -> None:
    path = target
    _prepare(path, 1)
    barrier = threading.Barrier(100)
    results: list[bool] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        conn = connect(path, migrate=False)
        barrier.wait()
        won = claim_action(conn, "A0", f"replica-{i}", at=T0)
        conn.close()
        with lock:
            results.append(won)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 100
    assert results.count(True) == 1


async def test_exactly_one_of_100_concurrent_async_claims_wins(target: str) -> None:
    async with await Store.open(target) as store:
        await store.create_action(action("A0"))
        results = await asyncio.gather(
            *(store.claim_action("A0", f"r{i}", at=T0) for i in range(100))
        )
    assert results.count(True) == 1


async def test_two_stores_racing_on_every_exactly_once_claim_win_once_each(target: str) -> None:
    """claim_action, claim_undo, claim_root, remember_event and open_or_join_incident, each
    raced 50 times by two stores (two replicas' pools) on one database."""
    async with await Store.open(target) as one, await Store.open(target) as two:
        stores = [one, two] * 25
        opened = await asyncio.gather(
            *(
                s.open_or_join_incident("gpu-node-01", "C1", opened_by="U1", at=T0, locale="en")
                for s in stores
            )
        )
        assert [created for _, created in opened].count(True) == 1
        assert len({incident.id for incident, _ in opened}) == 1
        incident_id = opened[0][0].id
        await one.create_action(action("A0"))
        races = {
            "claim_action": [s.claim_action("A0", f"r{i}", at=T0) for i, s in enumerate(stores)],
            "remember_event": [s.remember_event("E1", at=T0) for s in stores],
            "claim_root": [
                s.claim_root(incident_id, f"r{i}", at=T0, stale_before=T0)
                for i, s in enumerate(stores)
            ],
        }
        for name, calls in races.items():
            assert (await asyncio.gather(*calls)).count(True) == 1, name
        assert await one.set_action_state("A0", "succeeded", at=T0)
        undos = await asyncio.gather(
            *(s.claim_undo("A0", f"r{i}", at=T0) for i, s in enumerate(stores))
        )
        assert undos.count(True) == 1


def test_two_processes_racing_with_many_threads_claim_each_action_once(
    tmp_path: Path, target: str
) -> None:
    path = target
    n_actions, n_threads = 30, 10
    _prepare(path, n_actions)
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, path, str(go), f"p{p}", str(n_actions), str(n_threads)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for p in range(2)
    ]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        go.touch()
        outputs = [child.communicate(timeout=60)[0] for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert [child.returncode for child in children] == [0, 0]
    wins = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    all_wins = sorted(wins[0] + wins[1])
    assert all_wins == list(range(n_actions)), "every action claimed exactly once"
    conn = connect(path, migrate=False)
    claimed = conn.execute("SELECT COUNT(*) FROM actions WHERE state='claimed'").fetchone()[0]
    conn.close()
    assert claimed == n_actions
