"""moto's per-request overheads on the fire path's writes (the embedded AWS's).

Measured with 8 client threads against the embedded AWS (``/tmp/moto_bench.py``, issue
12): a claim (conditional UpdateItem, ``ReturnValues=ALL_NEW`` as pynamodb asks) cost
the server ~11 ms of CPU, a run record (PutItem) ~3.5 ms, an SQS SendMessage ~4 ms and
a SendMessageBatch of 10 ~11 ms. Where it went (py-spy, GIL held):

1. Answering with items: moto 5.2 serialises every ``AttributeValue`` of an answer
   through its generic, model-driven serializer: for each of the shape's ten members a
   context object, a key path and six alias providers to find the member in a
   one-key dict. 28 % of a claim (the whole trigger item comes back). The patch writes
   an ``AttributeValue`` that is a plain one-key dict of the expected Python types
   directly, with the serializer's own base64 for binaries; anything else (another
   shape, an odd value, response transformers, other alias providers) goes the generic
   way. The answer is the same JSON.
2. Update expressions parsed twice per UpdateItem (the handler, then the backend) from
   the same text: 7 %. ``UpdateExpressionParser.make`` is a function of the text, and
   its tree is only read (``find_clauses``) or deep-copied before anything changes it
   (``UpdateExpressionValidator``), so the tree of a text is kept (pynamodb writes the
   same text for every claim; names and values vary, not the text). A text that fails
   to parse is not kept: it raises as before.
3. Condition expressions lexed twice per conditional write (the handler's check of the
   names and values used, then the backend's), each token found by trying six regular
   expressions in turn: 10 % of a claim. The tokens are a function of the text alone
   (immutable tuples, each with an empty children list no later step changes), so the
   token list of a text is kept and each parse gets its own copy of the list; the
   parse itself, which reads the names and values, runs as before.
4. SQS SendMessage reads ``queue.attributes`` for ``ContentBasedDeduplication``, which
   counts every message of the queue (``moto_sqs_speed``: one scan instead of four,
   still a scan per message sent): 21 % of a send with ~1,300 messages queued, and the
   fire queue holds thousands of delayed ones. The patch reads that one attribute the
   way ``attributes`` builds it (present for a FIFO queue only, a bool as
   ``"true"``/``"false"``); the rest of ``send_message`` is moto 5.2.5's.
5. moto's dispatcher asks ``list_of_moto_modules()`` on every request: a listing of
   moto's package directory and an ``isdir`` per entry, under the dispatcher's lock
   (5 % of a PutItem, 9 % of a SendMessage). The directory does not change while
   the process runs, so it is listed once.
"""

from __future__ import annotations

import functools
from typing import Any

from devstack.moto_version import require_pinned_moto

__all__ = ["make_writes_fast", "patched_write_names"]

_SLOW = object()  # "not one we answer directly": the generic serializer does it

_MEMBER_TYPES = {
    "S": "string",
    "N": "string",
    "B": "blob",
    "SS": "list",
    "NS": "list",
    "BS": "list",
    "M": "map",
    "L": "list",
    "NULL": "boolean",
    "BOOL": "boolean",
}


def _unnamed(shape: Any) -> bool:
    return "name" not in shape.serialization


def _is_attribute_value(shape: Any) -> bool:
    """Whether ``shape`` is the ``AttributeValue`` union the fast path writes: the ten
    members of their types, no member renamed in the wire format, sets of strings or
    blobs, a map of and a list of ``AttributeValue``."""
    if shape.type_name != "structure" or shape.name != "AttributeValue":
        return False
    if shape.is_document_type or not _unnamed(shape):
        return False
    members = shape.members
    if set(members) != set(_MEMBER_TYPES):
        return False
    for name, member in members.items():
        if member.type_name != _MEMBER_TYPES[name] or not _unnamed(member):
            return False
    sets = {"SS": "string", "NS": "string", "BS": "blob"}
    for name, item_type in sets.items():
        item = members[name].member
        if item.type_name != item_type or not _unnamed(item):
            return False
    nested = (members["M"].value, members["L"].member)
    if members["M"].key.type_name != "string":
        return False
    return all(
        n.type_name == "structure"
        and n.name == "AttributeValue"
        and not n.is_document_type
        and _unnamed(n)
        and set(n.members) == set(_MEMBER_TYPES)
        for n in nested
    )


def _known(shape: Any) -> bool:
    """``_is_attribute_value``, kept on the shape (as moto keeps ``parent`` there): model
    shapes live as long as their model, but an error's are made anew for each error."""
    verdict = shape.__dict__.get("_cronhook_attribute_value")
    if verdict is None:
        verdict = shape._cronhook_attribute_value = _is_attribute_value(shape)
    return verdict


def _default_picker(picker: Any) -> bool:
    """The picker ``ActionResult.execute_result`` makes: default alias providers, no
    response transformers. (For a plain dict with one key of the ten, it then finds each
    member under its own name and nothing else.)"""
    from moto.core import serialize

    if type(picker) is not serialize.XFormedAttributePicker or picker.response_transformers:
        return False
    return list(picker.alias_providers) == [
        serialize.ExplicitAlias,
        serialize.ShapeNameAlias,
        serialize.NoAlias,
        serialize.ShapePrefixAlias,
        serialize.ClassPrefixAlias,
        serialize.ModelAlias,
    ]


def _plain(serializer: Any, value: Any) -> Any:
    """What the JSON serializer makes of an ``AttributeValue`` ``value``, or ``_SLOW``.

    Mirrors ``BaseJSONSerializer``: strings as they are (``str`` of a ``str``), blobs
    through ``_base64``, booleans as they are, a set or list item by item, a map entry
    by entry. A value of any other shape or type is left to the generic serializer, and
    so is a map with an entry named "" (moto merges that entry's value into the map)."""
    if type(value) is not dict or len(value) != 1:
        return _SLOW
    ((kind, inner),) = value.items()
    if kind == "S" or kind == "N":
        return {kind: inner} if type(inner) is str else _SLOW
    if kind == "M":
        if type(inner) is not dict:
            return _SLOW
        entries = {}
        for name, entry in inner.items():
            if not name:  # moto writes an entry named "" into the map itself
                return _SLOW
            done = _plain(serializer, entry)
            if done is _SLOW:
                return _SLOW
            entries[name] = done
        return {"M": entries}
    if kind == "L":
        if type(inner) is not list:
            return _SLOW
        items = []
        for entry in inner:
            done = _plain(serializer, entry)
            if done is _SLOW:
                return _SLOW
            items.append(done)
        return {"L": items}
    if kind == "NULL" or kind == "BOOL":
        return {kind: inner} if type(inner) is bool else _SLOW
    if kind == "SS" or kind == "NS":
        if type(inner) is not list or any(type(v) is not str for v in inner):
            return _SLOW
        return {kind: list(inner)}
    if kind == "B":
        return {"B": serializer._base64(inner)} if type(inner) in (bytes, str) else _SLOW
    if kind == "BS":
        if type(inner) is not list or any(type(v) not in (bytes, str) for v in inner):
            return _SLOW
        return {"BS": [serializer._base64(v) for v in inner]}
    return _SLOW


def _serialize_structure(
    self: Any, original: Any, serialized: Any, value: Any, shape: Any, key: str
) -> None:
    """``BaseJSONSerializer._serialize_type_structure``, an ``AttributeValue`` written
    directly when ``_plain`` can (what the generic path would write, under the same key)."""
    if key and type(value) is dict and _known(shape) and _default_picker(self._value_picker):
        done = _plain(self, value)
        if done is not _SLOW:
            self._default_serialize(serialized, done, shape, key)
            return
    original(self, serialized, value, shape, key)


def _content_based_deduplication(queue: Any) -> Any:
    """``queue.attributes.get("ContentBasedDeduplication")`` without building the rest
    (its three message counts scan the whole queue)."""
    names = list(queue.BASE_ATTRIBUTES)
    if queue.fifo_queue:
        names += queue.FIFO_ATTRIBUTES
    if queue.kms_master_key_id:
        names += queue.KMS_ATTRIBUTES
    if "ContentBasedDeduplication" not in names:
        return None
    value = queue.content_based_deduplication
    return str(value).lower() if isinstance(value, bool) else value


def _send_message(
    self: Any,
    queue_name: str,
    message_body: str,
    message_attributes: dict[str, Any] | None = None,
    delay_seconds: int | None = None,
    deduplication_id: str | None = None,
    group_id: str | None = None,
    system_attributes: dict[str, Any] | None = None,
    validate_group_id: bool = True,
) -> Any:
    """moto 5.2.5's ``SQSBackend.send_message``, reading only the one attribute it needs."""
    import hashlib
    import string

    from moto.sqs import models
    from moto.sqs.exceptions import InvalidParameterValue

    queue = self.get_queue(queue_name)
    self._validate_message(
        queue,
        message_body=message_body,
        delay_seconds=int(delay_seconds or 0),
        deduplication_id=deduplication_id,
        group_id=group_id,
        validate_group_id=validate_group_id,
    )
    if delay_seconds is not None:
        delay_seconds = int(delay_seconds)
    else:
        delay_seconds = queue.delay_seconds
    message_id = str(models.random.uuid4())
    message = models.Message(message_id, message_body, system_attributes)
    if _content_based_deduplication(queue) == "true":
        sha256 = hashlib.sha256()
        sha256.update(message_body.encode("utf-8"))
        message.deduplication_id = sha256.hexdigest()
    if deduplication_id is not None:
        message.deduplication_id = deduplication_id
        message.sequence_number = "".join(models.random.choice(string.digits) for _ in range(20))
    if group_id is not None:
        message.group_id = group_id
    if message_attributes:
        message.message_attributes = message_attributes
    if delay_seconds > models.MAXIMUM_MESSAGE_DELAY:  # type: ignore[operator]
        msg = (
            f"Value {delay_seconds} for parameter DelaySeconds is invalid. "
            "Reason: DelaySeconds must be >= 0 and <= 900."
        )
        raise InvalidParameterValue(msg)
    message.mark_sent(delay_seconds=delay_seconds)
    queue.add_message(message)
    return message


def _patch_condition_lexing() -> None:
    """Keep the tokens of each condition expression text (``ConditionExpressionParser``
    itself only: a subclass may lex otherwise)."""
    from collections import deque

    from moto.dynamodb.comparisons import ConditionExpressionParser

    original = ConditionExpressionParser._lex_condition_expression

    @functools.lru_cache(maxsize=4096)
    def lexed(text: str) -> tuple:
        return tuple(original(ConditionExpressionParser(text, None, None)))

    def _lex_condition_expression(self: Any) -> Any:
        text = self.condition_expression
        if type(self) is ConditionExpressionParser and type(text) is str:
            return deque(lexed(text))
        return original(self)

    ConditionExpressionParser._lex_condition_expression = _lex_condition_expression  # type: ignore[method-assign]


def patched_write_names() -> list[tuple[Any, str]]:
    """The (owner, attribute) pairs ``make_writes_fast`` replaces (tests restore them)."""
    from moto import backends
    from moto.core.serialize import BaseJSONSerializer
    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
    from moto.sqs.models import SQSBackend

    return [
        (ConditionExpressionParser, "_lex_condition_expression"),
        (BaseJSONSerializer, "_serialize_type_structure"),
        (UpdateExpressionParser, "make"),
        (SQSBackend, "send_message"),
        (backends, "list_of_moto_modules"),
    ]


def make_writes_fast() -> None:
    """Patch moto's AttributeValue answers, expression parsing, SQS send and module
    listing (idempotent)."""
    require_pinned_moto("moto_write_speed")
    from moto import backends
    from moto.core.serialize import BaseJSONSerializer
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
    from moto.sqs.models import SQSBackend

    if getattr(BaseJSONSerializer._serialize_type_structure, "_cronhook_fast", False):
        return
    original_structure = BaseJSONSerializer._serialize_type_structure

    def _serialize_type_structure(
        self: Any, serialized: Any, value: Any, shape: Any, key: str
    ) -> None:
        _serialize_structure(self, original_structure, serialized, value, shape, key)

    _serialize_type_structure._cronhook_fast = True  # type: ignore[attr-defined]
    BaseJSONSerializer._serialize_type_structure = _serialize_type_structure  # type: ignore[method-assign]

    original_make = UpdateExpressionParser.__dict__["make"].__func__
    parsed = functools.lru_cache(maxsize=4096)(
        lambda text: original_make(UpdateExpressionParser, text)
    )

    def make(cls: Any, expression_str: Any) -> Any:
        if cls is UpdateExpressionParser and type(expression_str) is str:
            return parsed(expression_str)
        return original_make(cls, expression_str)

    UpdateExpressionParser.make = classmethod(make)  # type: ignore[method-assign, assignment]
    _patch_condition_lexing()
    SQSBackend.send_message = _send_message  # type: ignore[method-assign]

    modules = tuple(backends.list_of_moto_modules())

    def list_of_moto_modules() -> Any:
        return iter(modules)

    backends.list_of_moto_modules = list_of_moto_modules  # type: ignore[assignment]
