"""Domain packs: plug-ins that add a domain's knowledge to the domain-free planner.

`load_packs(names)` builds the configured packs from the registry below (name → "module:Class");
a third-party pack registers itself with `register_pack` before the planner is built.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from planner.packs.base import DomainPack

_REGISTRY: dict[str, str] = {"travel": "planner.packs.travel:TravelPack"}


def register_pack(name: str, target: str) -> None:
    """Make `name` loadable; `target` is "package.module:ClassName" (a DomainPack subclass)."""
    _REGISTRY[name] = target


def known_packs() -> list[str]:
    return sorted(_REGISTRY)


def load_packs(names: Sequence[str]) -> list[DomainPack]:
    packs: list[DomainPack] = []
    for name in names:
        if name not in _REGISTRY:
            raise ValueError(f"unknown domain pack {name!r}; known: {known_packs()}")
        module_name, class_name = _REGISTRY[name].split(":")
        pack = getattr(importlib.import_module(module_name), class_name)()
        if not isinstance(pack, DomainPack):
            raise TypeError(f"{_REGISTRY[name]} is not a DomainPack")
        packs.append(pack)
    return packs


__all__ = ["DomainPack", "known_packs", "load_packs", "register_pack"]
