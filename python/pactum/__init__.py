"""Governed prompt contracts, called from Python.

A prompt contract (``PRC-*``) is a versioned JSON file that says how one kind of LLM
exchange must look; ``registry.json`` governs them. A call resolves the pin, validates the
input against the contract's ``input_schema`` before any model call, renders the prompt,
calls the provider, extracts and validates the reply against ``output_schema``, repairs it
when allowed, and records the exchange in the project's hash-chained ledger::

    import pactum

    client = pactum.open(".")                      # providers as `pactum run` chooses them
    r = client.call("PRC-CLASSIFY-001@^1", {"user_input": "I was charged twice."})
    r.output["label"], r.version, r.ledger_hash

Failures raise :class:`PactumError` (``code``, ``message``, ``errors``), as one subclass per
family: :class:`InputInvalid`, :class:`OutputInvalid`, :class:`NotFound`,
:class:`ProviderError`, :class:`BudgetExceeded`, :class:`ConfigError`,
:class:`RegistryError`. Calls release the GIL: one client serves many threads, and
:meth:`Client.acall` never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from typing import Any, Dict, List, Optional, Union

from . import _native

__all__ = [
    "open",
    "validate",
    "Client",
    "Call",
    "PactumError",
    "InputInvalid",
    "OutputInvalid",
    "NotFound",
    "ProviderError",
    "BudgetExceeded",
    "ConfigError",
    "RegistryError",
    "__version__",
]

__version__: str = _native.__version__


class PactumError(Exception):
    """A pactum failure: its stable ``code`` (``pactum explain CODE`` says what it means),
    its ``message``, and every failure of it in ``errors`` (dicts with ``code``,
    ``message`` and, where there is one, ``pointer``)."""

    def __init__(self, code: str, message: str, errors: List[Dict[str, Any]]) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.errors = errors


class InputInvalid(PactumError):
    """The input does not fit the contract's ``input_schema`` (no model was called), or
    the context it requires is missing."""


class OutputInvalid(PactumError):
    """The model's reply gave no valid output: no JSON could be extracted, it does not fit
    ``output_schema``, it was cut off, the repairs did not fix it, or a judge rejected it."""


class NotFound(PactumError):
    """The pin names no registered contract, or no usable version of it."""


class ProviderError(PactumError):
    """The provider failed: an error status, a timeout, no connection, rate limits, an
    answer that is not its API's, missing settings, or an offline provider with no reply."""


class BudgetExceeded(PactumError):
    """The work order's token budget cannot pay for the next call, or the model kept
    calling tools past ``max_disclosures``."""


class ConfigError(PactumError):
    """``pactum.toml`` is invalid, would leak a secret, or names a setting the environment
    does not confirm."""


class RegistryError(PactumError):
    """``registry.json`` or a governed file does not hold: a changed hash, a broken
    history, an entry the history does not account for."""


_FAMILIES = [
    (InputInvalid, ("input_", "required_context_missing", "template_variable_missing")),
    (
        OutputInvalid,
        ("output_", "supervisor_unrecoverable", "semantic_rejected", "expected_output_missing"),
    ),
    (NotFound, ("contract_not_found", "contract_version_not_found", "contract_not_active", "prompt_pack_not_found")),
    (ProviderError, ("provider_", "replay_miss", "script_")),
    (BudgetExceeded, ("budget_exceeded", "disclosure_limit_exceeded")),
    (ConfigError, ("config_",)),
    (RegistryError, ("registry_", "contract_hash_mismatch", "contract_id_mismatch", "contract_schema_invalid")),
]


def _error(native: BaseException) -> PactumError:
    code, message, errors = native.args
    cls = PactumError
    for family, prefixes in _FAMILIES:
        if any(code == p or (p.endswith("_") and code.startswith(p)) for p in prefixes):
            cls = family
            break
    return cls(code, message, json.loads(errors))


def _native_call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except _native.NativeError as e:
        raise _error(e) from None


class Call:
    """One call's outcome: the validated ``output`` (a dict for a JSON contract, a string
    for a text one), the contract that answered (``contract_id``, ``version``), ``usage``
    (``prompt_tokens``, ``completion_tokens``), ``warnings``, the provider, and the
    exchange's ledger record (``ledger_seq``, ``ledger_hash``; ``None`` without a
    ledger)."""

    __slots__ = ("output", "contract_id", "version", "usage", "warnings", "ledger_seq", "ledger_hash", "provider")

    def __init__(self, doc: Dict[str, Any]) -> None:
        self.output: Any = doc["output"]
        self.contract_id: str = doc["contract_id"]
        self.version: str = doc["version"]
        self.usage: Dict[str, int] = doc["usage"]
        self.warnings: List[Dict[str, Any]] = doc["warnings"]
        self.ledger_seq: Optional[int] = doc["ledger_seq"]
        self.ledger_hash: Optional[str] = doc["ledger_hash"]
        self.provider: str = doc["provider"]

    def __repr__(self) -> str:
        return f"Call({self.contract_id}@{self.version}, output={self.output!r})"


class Client:
    """A project's contracts, callable from Python. Make one with :func:`open`; share it
    between threads."""

    def __init__(self, native: Any) -> None:
        self._native = native

    def call(self, pin: str, input: Dict[str, Any]) -> Call:
        """Calls the contract ``pin`` (``PRC-X-001@^1``, an exact version, a label) on
        ``input``: one governed, recorded exchange. Raises a :class:`PactumError`."""
        doc = _native_call(self._native.call, pin, json.dumps(input))
        return Call(json.loads(doc))

    async def acall(self, pin: str, input: Dict[str, Any]) -> Call:
        """:meth:`call` without blocking the event loop (it runs on the loop's default
        executor, the GIL released while pactum works)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(self.call, pin, input))

    def run(self, path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
        """Runs the work order file at ``path`` (exchange or kernel) as ``pactum run`` does;
        the result as ``pactum run --json`` gives it (``ok``, ``status``, ``output`` or
        ``final_answer``, ``usage``, ``errors``). A run that fails is a result, not an
        exception; a file that does not load raises."""
        return json.loads(_native_call(self._native.run, os.fspath(path)))

    @property
    def offline(self) -> Optional[str]:
        """Why the client runs offline (no provider configured), or ``None``."""
        return self._native.offline()


def open(
    root: Union[str, "os.PathLike[str]"] = ".",
    provider: Optional[str] = None,
    ledger: Union[None, bool, str, "os.PathLike[str]"] = None,
    allow_draft: bool = False,
) -> Client:
    """Opens the project at or above ``root``.

    ``provider`` names the provider (``"openai"``, ``"dry-run"``, a ``[providers.NAME]`` of
    pactum.toml); by default it is chosen as ``pactum run`` chooses it (the environment,
    then pactum.toml; offline when nothing is configured). ``ledger``: ``None`` (the
    project's ``.pactum/ledger.jsonl``), a file path, or ``False`` for none. ``allow_draft``
    lets drafts resolve.
    """
    if ledger is None or ledger is True:
        where = "project"
    elif ledger is False:
        where = "none"
    else:
        where = os.fspath(ledger)
    native = _native_call(_native.NativeClient, os.fspath(root), provider, where, allow_draft)
    return Client(native)


def validate(paths: Union[str, "os.PathLike[str]", List[Union[str, "os.PathLike[str]"]]] = ".") -> List[Dict[str, Any]]:
    """``pactum validate PATHS``: every finding as a dict (``code``, ``severity``, ``file``,
    ``pointer``, ``line``, ``column``, ``message``, ``help``); an empty list when clean."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    doc = json.loads(_native_call(_native.validate, [os.fspath(p) for p in paths]))
    return list(doc["diagnostics"])
