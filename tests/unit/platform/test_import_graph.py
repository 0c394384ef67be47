"""The shape of the code, beyond what the import-linter contracts in pyproject declare: no import cycle
between any two files of the core layer or the API (lazy imports inside functions count too), and the
in-process bus wired from the one composition root."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[3]


@cache
def _graph() -> grimp.ImportGraph:
    for folder in ("functions", "layers/core/python"):
        if str(ROOT / folder) not in sys.path:
            sys.path.insert(0, str(ROOT / folder))
    return grimp.build_graph("leadcrm", "api")


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_two_files_import_each_other_even_through_others():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for name in ("a", "b", "c", "d"):
        graph.add_module(name)
    graph.add_import(importer="a", imported="b")
    graph.add_import(importer="b", imported="c")
    graph.add_import(importer="c", imported="a")
    graph.add_import(importer="c", imported="d")
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_old_layered_packages_are_gone():
    core = ROOT / "layers/core/python/leadcrm"
    assert not [name for name in ("services", "domain", "db", "adapters") if (core / name).exists()]


@pytest.mark.parametrize(
    "capability",
    [
        "directory",
        "pipelines",
        "leads",
        "work",
        "conversations",
        "tickets",
        "deals",
        "analytics",
        "qualification",
        "ingestion",
    ],
)
def test_every_capability_has_its_rules_and_its_tables(capability):
    folder = ROOT / "layers/core/python/leadcrm" / capability
    assert (folder / "rules.py").exists() or (folder / "rules" / "__init__.py").exists()
    assert (folder / "tables.py").exists()


def test_every_in_process_message_has_a_handler_from_the_wiring():
    from leadcrm.directory import messages as directory_messages
    from leadcrm.leads import messages
    from leadcrm.platform import messagebus

    published = {messages.LeadCreated, messages.ScoringInputsChanged, messages.LeadErasing, messages.LeadBecameMember}
    published |= {directory_messages.MembershipLeftStaff, directory_messages.HeldEventsReleased}
    assert published <= set(messagebus.subscriptions())
