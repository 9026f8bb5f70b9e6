"""Build the derived-data cache of a test run (shortlist.derived) in a process of its own, once,
while pytest's workers start: ``python -m tests.warm_cache`` (tests/conftest.py starts it). A
worker that needs an index before it is kept waits on the builder's lock instead of building a
copy of its own on the same two cores."""

from __future__ import annotations

from shortlist import places
from shortlist.simulator import SimulatorConfig
from shortlist.simulator.app import _index_for


def main() -> None:
    config = SimulatorConfig()
    _index_for(config.seed, config.population_size, config.no_email_rate)
    places.load()


if __name__ == "__main__":
    main()
