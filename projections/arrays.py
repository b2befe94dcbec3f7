"""Batches of rows as column arrays, so one cached statement takes any batch.

A multi-row `VALUES` is a new statement for every batch size, and SQLAlchemy
compiles each afresh: by py-spy, a quarter of a consumer's time. `unnest` over one
array per column is the same statement every time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg


def unnest(columns: Sequence[sa.Column[Any]]) -> sa.TableValuedAlias:
    """`unnest(:a, :b, …) AS batch(a, b, …)`, one array parameter per column."""
    arrays = (sa.bindparam(c.name, type_=pg.ARRAY(c.type)) for c in columns)
    names = (c.name for c in columns)
    return sa.func.unnest(*arrays).table_valued(*names).render_derived(name="batch")


def insert_rows(table: sa.Table) -> pg.Insert:
    """INSERT of every column of `table` from one array parameter per column."""
    columns = list(table.columns)
    batch = unnest(columns)
    return pg.insert(table).from_select([c.name for c in columns], sa.select(batch))


def as_arrays(
    rows: Iterable[Mapping[str, Any]], columns: Iterable[sa.Column[Any]]
) -> dict[str, list[Any]]:
    listed = list(rows)
    return {c.name: [row[c.name] for row in listed] for c in columns}
