"""SQL text for the DML API: quoted identifiers, and conditions/values given as SQL strings or pyspark Columns.

A Column becomes SQL text without a round trip to Spark:

* on a classic session, the JVM column's expression node renders itself (``ColumnNode.sql``, the text Spark shows
  in ``Column<'...'>``);
* on Spark Connect, the client-side expression tree (column references, literals, functions and operators, CASE
  WHEN, casts, ``F.expr`` text) is rendered here.

Either way, a Column bound to one DataFrame (``df["id"]``, ``df.id``) is refused: SQL cannot say which DataFrame a
name belongs to, so ``F.col("source.id")`` (or a SQL string) must be used instead.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from typing import Any, Union

from pyspark.sql import Column

from strata.errors import InvalidOptionError

#: A condition or a value: SQL text, or a pyspark Column (classic or Spark Connect).
Expr = Union[str, Column]

__all__ = ["Expr", "quote_identifier", "quote_name", "split_name", "to_sql"]


def quote_identifier(name: str) -> str:
    """One identifier in backticks, backticks inside doubled: ``a`b`` -> ```a``b```."""
    return "`" + name.replace("`", "``") + "`"


def quote_name(parts: list[str]) -> str:
    """A multi-part name, each part quoted: ``["db", "t"]`` -> ```db`.`t```."""
    return ".".join(quote_identifier(p) for p in parts)


def split_name(name: str) -> list[str]:
    """The parts of a dotted name as Spark reads it: ``db.t`` -> ``["db", "t"]``, ```my db`.`a.b``` ->
    ``["my db", "a.b"]`` (inside backticks, a doubled backtick is one). Raises ``ValueError`` on a malformed name."""
    parts: list[str] = []
    current, quoted, i, started = "", False, 0, False
    while i < len(name):
        ch = name[i]
        if quoted:
            if ch == "`" and name[i + 1:i + 2] == "`":
                current, i = current + "`", i + 2
                continue
            if ch == "`":
                quoted = False
            else:
                current += ch
        elif ch == "`" and not current:
            quoted = started = True
        elif ch == ".":
            if not started:
                raise ValueError(f"{name!r} is not a valid name: an empty part before a dot")
            parts.append(current)
            current, started = "", False
        else:
            current, started = current + ch, True
        i += 1
    if quoted or not started:
        raise ValueError(f"{name!r} is not a valid name: " + ("an unclosed backtick" if quoted else "an empty part"))
    parts.append(current)
    return parts


def _string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _bound_error(what: str) -> TypeError:
    return TypeError(
        f"{what} is a Column bound to one DataFrame (df['col'] or df.col); SQL cannot name the DataFrame it belongs "
        "to. Pass pyspark.sql.functions.col('source.col') / col('target.col') (with the merge's aliases) or a SQL "
        "string instead.")


def to_sql(value: object, what: str) -> str:
    """SQL text for ``value``, a SQL string or a Column; ``what`` names the argument in errors (a ``TypeError`` for
    other types and for Columns that cannot be rendered, a ``ValueError`` for empty strings)."""
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(f"{what} is an empty string; give a SQL expression such as \"id > 0\", or a Column")
        return value
    if isinstance(value, Column):
        jc = getattr(value, "_jc", None)
        if jc is not None:
            return "(" + _render(_from_classic(jc.node(), what), what) + ")"
        expr = getattr(value, "_expr", None)
        if expr is not None:
            return "(" + _render(_from_connect(expr, what), what) + ")"
    raise TypeError(
        f"{what} must be a SQL string (e.g. \"t.id = s.id\") or a pyspark.sql.Column (e.g. F.col('t.id') == "
        f"F.col('s.id')); got {type(value).__name__}: {value!r}")


# A Column as a small neutral tree, the same for classic and Spark Connect columns:
# ("col", identifier SQL) | ("sql", text) | ("lit", SQL literal) | ("fn", name, [args], distinct)
# | ("cast", child, type SQL) | ("case", [(cond, value)], else or None)
Node = tuple[Any, ...]


def _unrenderable(kind: str, what: str) -> TypeError:
    return TypeError(
        f"{what}: a Column containing {kind} cannot be rendered as SQL. Pass the condition or value as a SQL string "
        "(e.g. \"target.v = source.v + 1\"), or build it from F.col / F.lit / operators / SQL functions / F.expr.")


def _seq(scala_seq: Any) -> list[Any]:
    return [scala_seq.apply(i) for i in range(scala_seq.size())]


def _from_classic(node: Any, what: str) -> Node:
    kind = str(node.getClass().getSimpleName())
    if kind == "UnresolvedAttribute":
        if node.planId().isDefined():
            raise _bound_error(what)
        return ("col", quote_name([str(p) for p in _seq(node.nameParts())]))
    if kind == "SqlExpression":
        return ("sql", str(node.expression()))
    if kind == "ExpressionColumnNode":  # a Catalyst expression: df["col"] / df.col (an attribute), a UDF call, ...
        inner = str(node.expression().getClass().getSimpleName())
        if inner == "AttributeReference":
            raise _bound_error(what)
        raise _unrenderable(f"a {inner} ({node.sql()})", what)
    if kind == "Literal":
        data_type = node.dataType()
        type_sql = str(data_type.get().sql()) if data_type.isDefined() else None
        return ("lit", _classic_literal(node.value(), type_sql, what))
    if kind == "Cast":
        return ("cast", _from_classic(node.child(), what), str(node.dataType().sql()))
    if kind == "Alias":
        return _from_classic(node.child(), what)
    if kind == "CaseWhenOtherwise":
        branches = [(_from_classic(b._1(), what), _from_classic(b._2(), what)) for b in _seq(node.branches())]
        other = node.otherwise()
        return ("case", branches, _from_classic(other.get(), what) if other.isDefined() else None)
    if kind == "UnresolvedFunction":
        if node.isUserDefinedFunction() or node.isInternal():
            raise _unrenderable(f"the {'user-defined' if node.isUserDefinedFunction() else 'internal'} function "
                                f"{node.functionName()}", what)
        return ("fn", str(node.functionName()), [_from_classic(a, what) for a in _seq(node.arguments())],
                bool(node.isDistinct()))
    raise _unrenderable(f"a {kind} ({node.sql()})", what)


def _classic_literal(value: Any, type_sql: str | None, what: str) -> str:
    """A literal of a classic Column: py4j gives Python values for Java primitives and strings, JavaObjects for
    dates, timestamps and decimals."""
    if value is None:
        return f"CAST(NULL AS {type_sql})" if type_sql and type_sql != "VOID" else "NULL"
    if isinstance(value, decimal.Decimal):  # py4j converts java.math.BigDecimal
        return _decimal_literal(value, type_sql)
    if isinstance(value, (bool, int, float, str, bytes, bytearray)):
        return _python_literal(value, type_sql)
    java_class = str(value.getClass().getName())
    if java_class in ("java.sql.Date", "java.time.LocalDate"):
        return f"DATE '{value.toString()}'"
    if java_class == "java.sql.Timestamp":
        micros = (int(value.getTime()) // 1000) * 1_000_000 + int(value.getNanos()) // 1000
        return f"TIMESTAMP_MICROS({micros}L)"
    if java_class == "java.time.Instant":
        return f"TIMESTAMP_MICROS({int(value.getEpochSecond()) * 1_000_000 + int(value.getNano()) // 1000}L)"
    if java_class == "java.time.LocalDateTime":
        return f"TIMESTAMP_NTZ '{value.toString().replace('T', ' ')}'"
    raise _unrenderable(f"a literal of JVM class {java_class}", what)


def _decimal_literal(value: decimal.Decimal, type_sql: str | None) -> str:
    """A decimal literal of the type its value needs (or ``type_sql``)."""
    if not value.is_finite():
        raise TypeError(f"a decimal literal must be finite; got {value}")
    digits, exponent = value.as_tuple().digits, int(value.as_tuple().exponent)
    scale = max(-exponent, 0)
    precision = max(len(digits) + max(exponent, 0), scale, 1)
    return f"CAST('{value:f}' AS {type_sql or f'DECIMAL({precision},{scale})'})"


def _python_literal(value: Any, type_sql: str | None) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"CAST({value} AS {type_sql})" if type_sql else str(value)
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[
            repr(value)]
        return f"CAST('{text}' AS {type_sql or 'DOUBLE'})"
    if isinstance(value, (bytes, bytearray)):
        return "X'" + bytes(value).hex().upper() + "'"
    return _string_literal(str(value))


def _from_connect(expr: Any, what: str) -> Node:
    from pyspark.sql.connect import expressions as ce

    if isinstance(expr, ce.ColumnReference):
        if getattr(expr, "_plan_id", None) is not None:
            raise _bound_error(what)
        return ("col", quote_name(split_name(str(expr._unparsed_identifier))))  # a.b, `a.b`: as Spark parses it
    if isinstance(expr, ce.SQLExpression):
        return ("sql", str(expr._expr))
    if isinstance(expr, ce.LiteralExpression):
        return ("lit", _connect_literal(expr._value, expr._dataType, what))
    if isinstance(expr, ce.CastExpression):
        data_type = expr._data_type
        return ("cast", _from_connect(expr._expr, what),
                data_type if isinstance(data_type, str) else data_type.simpleString().upper())
    if isinstance(expr, ce.ColumnAlias):
        return _from_connect(expr._child, what)
    if isinstance(expr, ce.CaseWhen):
        return ("case", [(_from_connect(c, what), _from_connect(v, what)) for c, v in expr._branches],
                _from_connect(expr._else_value, what) if expr._else_value is not None else None)
    if isinstance(expr, ce.UnresolvedFunction):
        return ("fn", str(expr._name), [_from_connect(a, what) for a in expr._args],
                bool(getattr(expr, "_is_distinct", False)))
    raise _unrenderable(f"a {type(expr).__name__} ({expr!r})", what)


def _connect_literal(value: Any, data_type: Any, what: str) -> str:
    """A literal of a Spark Connect Column: the client keeps values in Spark's internal form (days, micros)."""
    from pyspark.sql import types as T

    type_sql = data_type.simpleString().upper()
    if value is None:
        return "NULL" if isinstance(data_type, T.NullType) else f"CAST(NULL AS {type_sql})"
    if isinstance(data_type, (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType,
                              T.DoubleType, T.StringType, T.BinaryType)):
        plain = isinstance(data_type, (T.BooleanType, T.IntegerType, T.StringType, T.BinaryType))
        return _python_literal(value, None if plain else type_sql)
    if isinstance(data_type, T.DecimalType):  # the client's type is DECIMAL(10,0) whatever the value: use the value's
        return _decimal_literal(value, None)
    if isinstance(data_type, T.DateType):
        return f"DATE '{(_dt.date(1970, 1, 1) + _dt.timedelta(days=int(value))).isoformat()}'"
    if isinstance(data_type, T.TimestampType):  # microseconds since the epoch: the instant itself
        return f"TIMESTAMP_MICROS({int(value)}L)"
    if isinstance(data_type, T.TimestampNTZType):
        wall = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=int(value))
        return f"TIMESTAMP_NTZ '{wall.isoformat(sep=' ', timespec='microseconds')}'"
    raise _unrenderable(f"a literal of type {type_sql}", what)


_BINARY = {
    "=": "=", "==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>", "+": "+", "-": "-",
    "*": "*", "/": "/", "%": "%", "and": "AND", "or": "OR", "&": "&", "|": "|", "^": "^", "like": "LIKE",
    "ilike": "ILIKE", "rlike": "RLIKE",
}
_POSTFIX = {"isnull": "IS NULL", "isnotnull": "IS NOT NULL"}


def _render(node: Node, what: str) -> str:
    kind = node[0]
    if kind in ("col", "lit"):
        return str(node[1])
    if kind == "sql":
        return f"({node[1]})"
    if kind == "cast":
        return f"CAST({_render(node[1], what)} AS {node[2]})"
    if kind == "case":
        branches = "".join(f" WHEN {_render(c, what)} THEN {_render(v, what)}" for c, v in node[1])
        other = f" ELSE {_render(node[2], what)}" if node[2] is not None else ""
        return f"CASE{branches}{other} END"
    name, args, distinct = str(node[1]), [_render(a, what) for a in node[2]], bool(node[3])
    low = name.lower()
    if low in _BINARY and len(args) == 2:
        return f"({args[0]} {_BINARY[low]} {args[1]})"
    if low in _POSTFIX and len(args) == 1:
        return f"({args[0]} {_POSTFIX[low]})"
    if low in ("not", "!") and len(args) == 1:
        return f"(NOT {args[0]})"
    if low in ("negative", "-") and len(args) == 1:
        return f"(- {args[0]})"
    if low == "in" and args:
        return f"({args[0]} IN ({', '.join(args[1:])}))"
    if low == "when" and len(args) >= 2:  # Connect: F.when(c, v).otherwise(e) is when(c, v, e)
        pairs = "".join(f" WHEN {args[i]} THEN {args[i + 1]}" for i in range(0, len(args) - 1, 2))
        other = f" ELSE {args[-1]}" if len(args) % 2 else ""
        return f"CASE{pairs}{other} END"
    if not all(part.isidentifier() for part in name.split(".")):
        raise _unrenderable(f"the operator or function {name!r}", what)
    return f"{name}({'DISTINCT ' if distinct else ''}{', '.join(args)})"


def timestamp_option(timestamp: _dt.datetime | _dt.date | str) -> str:
    """The ``timestampAsOf`` text for a timestamp given as ``datetime``, ``date`` or ``str``."""
    if isinstance(timestamp, _dt.datetime):
        if timestamp.tzinfo is not None and timestamp.utcoffset() is not None:
            # An absolute instant: say so with an explicit offset (Spark's timestamp cast understands it).
            utc = timestamp.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            return utc.isoformat(sep=" ", timespec="microseconds") + "Z"
        return timestamp.isoformat(sep=" ", timespec="microseconds")  # session time zone, like a string
    if isinstance(timestamp, _dt.date):
        return timestamp.isoformat() + " 00:00:00"
    if isinstance(timestamp, str) and timestamp.strip():
        return timestamp
    raise InvalidOptionError(
        "timestamp must be a datetime, a date or a non-empty string such as '2026-01-31 12:00:00'; "
        f"got {timestamp!r}")
