"""Every exception class of the product packages derives from the one error root, and declares an
answer the gateway can give (fast, no fakes: it imports the modules and reads their classes).

The error funnel (`serving/errors.py::error_body`) answers any `PlanstackBaseError` with the status,
OpenAI type, code, param and Retry-After its class declares; an exception outside the root is a bare
500 there, and one whose `type` is not an OpenAI error type (an executor's `kind` written as `type`,
say) would reach clients as a wrong error body. These tests fail on either.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from types import ModuleType

from contract.errors import ERROR_TYPES, PlanstackBaseError

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("contract", "planner", "executors", "retrieval", "serving")


def product_modules() -> list[ModuleType]:
    modules = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__main__":  # running it is the CLI, not a definition
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules.append(importlib.import_module(name))
    return modules


def exception_classes() -> list[type[BaseException]]:
    """Exception classes defined (not merely imported) in the product packages."""
    found: dict[str, type[BaseException]] = {}
    for module in product_modules():
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = value
    return list(found.values())


def outside_the_root(classes: list[type[BaseException]]) -> list[str]:
    return sorted(f"{cls.__module__}.{cls.__qualname__}" for cls in classes if not issubclass(cls, PlanstackBaseError))


def without_an_answer(classes: list[type[BaseException]]) -> list[str]:
    """Errors whose class-level status, type or Retry-After the funnel could not answer with."""
    wrong = []
    for cls in classes:
        if not issubclass(cls, PlanstackBaseError):
            continue
        if cls.type not in ERROR_TYPES or not 400 <= cls.status < 600:
            wrong.append(f"{cls.__qualname__}: status {cls.status}, type {cls.type!r}")
        elif cls.retry_after_s is not None and cls.retry_after_s < 1:
            wrong.append(f"{cls.__qualname__}: Retry-After {cls.retry_after_s}")
    return wrong


CLASSES = exception_classes()


def test_the_scan_sees_the_families_of_every_package() -> None:
    names = {cls.__name__ for cls in CLASSES}
    assert {"PlanstackError", "ExecutorError", "LLMError", "RetrievalError", "CatalogError", "RunBusy"} <= names


def test_every_exception_class_derives_from_the_root() -> None:
    assert outside_the_root(CLASSES) == []


def test_every_error_declares_an_answer() -> None:
    assert without_an_answer(CLASSES) == []


def test_the_checks_see_a_stray_class_and_an_executor_kind_written_as_type() -> None:
    class Stray(ValueError):
        pass

    class Typed(PlanstackBaseError):
        status = 409
        type = "invalid_request_error"

    class KindAsType(PlanstackBaseError):
        type = "run_busy"

    assert outside_the_root([Stray, Typed]) == [f"{__name__}.{Stray.__qualname__}"]
    assert without_an_answer([Stray, Typed, KindAsType]) == [f"{KindAsType.__qualname__}: status 500, type 'run_busy'"]
