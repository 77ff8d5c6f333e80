"""A page of a pynamodb query: up to ``limit`` items and the key to resume after the last one."""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_ROWS_EXAMINED", "take_page"]

# A filtered list reads at most this many rows per request, then answers with what it
# found and a cursor: a filter that matches nothing never turns into a full-table read.
MAX_ROWS_EXAMINED = 2000


def take_page(
    results: Any,
    model: Any,
    *,
    limit: int,
    materialize: Any = None,
) -> tuple[list, dict | None]:
    """Up to ``limit`` items of a pynamodb query, and the key to resume after the last one.

    ``materialize(objs) -> [item | None]`` turns one DynamoDB page into the items to
    return (None drops a row: filters, or rows of a keys-only index whose item is gone).
    The cursor points at the last row *returned*, not the last row read, so a page cut
    short by ``limit`` loses nothing.
    """
    pages = results.page_iter
    items: list = []
    for page in pages:
        raws = page.get("Items") or []
        objs = [model.from_raw_data(raw) for raw in raws]
        finals = materialize(objs) if materialize is not None else objs
        for n, (raw, final) in enumerate(zip(raws, finals, strict=True)):
            if final is None:
                continue
            items.append(final)
            if len(items) == limit:
                if n == len(raws) - 1 and pages.last_evaluated_key is None:
                    return items, None
                return items, {k: raw[k] for k in pages.key_names}
        if pages.last_evaluated_key and pages.total_scanned_count >= MAX_ROWS_EXAMINED:
            return items, pages.last_evaluated_key
    return items, None
