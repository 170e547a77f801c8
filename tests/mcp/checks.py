"""How the client scripts check and report: a failed check raises `Check`
(the script stops at the first), and `print_failures` names every failed
check a task group gathered, however deeply nested."""

from __future__ import annotations

from typing import Any


class Check(Exception):
    pass


def expect(cond: bool, what: str, detail: Any = "") -> None:
    if not cond:
        raise Check(f"{what}: {detail}")
    print(f"ok - {what}", flush=True)


def print_failures(group: BaseExceptionGroup) -> bool:
    """Prints each `Check` inside `group`; False when it holds none (the
    caller re-raises it then: something other than a check failed)."""
    checks = group.subgroup(Check)
    if checks is None:
        return False
    pending = list(checks.exceptions)
    while pending:
        failed = pending.pop()
        if isinstance(failed, BaseExceptionGroup):
            pending.extend(failed.exceptions)
        else:
            print(f"FAILED - {failed}", flush=True)
    return True
