"""The bundled external talent-API simulator (see :mod:`shortlist.simulator.app`)."""

from shortlist.simulator.app import (
    BehaviourPatch,
    SimulatorServer,
    create_simulator_app,
    population_of,
    serve_simulator,
)
from shortlist.simulator.behaviour import SimulatorConfig, SimulatorState
from shortlist.simulator.population import (
    ROLE_FAMILIES,
    Person,
    PopulationIndex,
    build_population,
    expand_role_family,
    role_family_of,
)


def __getattr__(name: str) -> object:
    # LOCATIONS comes from the world (GeoNames, about a second): built on first use only.
    if name == "LOCATIONS":
        from shortlist.simulator import population

        return population.LOCATIONS
    raise AttributeError(name)


__all__ = [
    "LOCATIONS",
    "ROLE_FAMILIES",
    "BehaviourPatch",
    "Person",
    "PopulationIndex",
    "SimulatorConfig",
    "SimulatorServer",
    "SimulatorState",
    "build_population",
    "create_simulator_app",
    "expand_role_family",
    "population_of",
    "role_family_of",
    "serve_simulator",
]
