"""Options of a streaming read of a Strata table (:meth:`strata.Table.stream`), checked before Spark is called."""

from __future__ import annotations

import datetime as _dt
import re

from strata.errors import InvalidOptionError
from strata.maintenance import check_whole

__all__ = ["stream_options"]

_SIZE = re.compile(r"^\s*\d+\s*([bkmgt]b?)?\s*$", re.IGNORECASE)


def stream_options(
    starting_version: int | str | None = None,
    starting_timestamp: _dt.datetime | _dt.date | str | None = None,
    max_files_per_trigger: int | None = None,
    max_bytes_per_trigger: int | str | None = None,
    skip_change_commits: bool = False,
    allow_source_column_rename: bool | int = False,
    allow_source_column_drop: bool | int = False,
    allow_source_column_type_change: bool | int = False,
) -> dict[str, str]:
    """The ``readStream`` options of Strata's streaming source for these arguments (see :meth:`Table.stream`)."""
    from strata._sql import timestamp_option

    options: dict[str, str] = {}
    if starting_version is not None and starting_timestamp is not None:
        raise InvalidOptionError("starting_version and starting_timestamp cannot be used together: pick one")
    if starting_version is not None:
        if isinstance(starting_version, str):
            if starting_version.strip().lower() != "latest":
                raise InvalidOptionError(f"starting_version must be a version >= 0 or 'latest'; got {starting_version!r}")
            options["startingVersion"] = "latest"
        else:
            options["startingVersion"] = str(check_whole("starting_version", starting_version, 0))
    if starting_timestamp is not None:
        options["startingTimestamp"] = timestamp_option(starting_timestamp)
    if max_files_per_trigger is not None:
        options["maxFilesPerTrigger"] = str(check_whole("max_files_per_trigger", max_files_per_trigger, 1))
    if max_bytes_per_trigger is not None:
        if isinstance(max_bytes_per_trigger, str):
            if not _SIZE.match(max_bytes_per_trigger):
                raise InvalidOptionError("max_bytes_per_trigger must be a number of bytes or a size such as '64m' or "
                                         f"'1g'; got {max_bytes_per_trigger!r}")
            options["maxBytesPerTrigger"] = max_bytes_per_trigger.strip()
        else:
            options["maxBytesPerTrigger"] = str(check_whole("max_bytes_per_trigger", max_bytes_per_trigger, 1))
    if not isinstance(skip_change_commits, bool):
        raise InvalidOptionError(f"skip_change_commits must be True or False; got {skip_change_commits!r}")
    if skip_change_commits:
        options["skipChangeCommits"] = "true"
    for arg, value, option in (("allow_source_column_rename", allow_source_column_rename, "allowSourceColumnRename"),
                               ("allow_source_column_drop", allow_source_column_drop, "allowSourceColumnDrop"),
                               ("allow_source_column_type_change", allow_source_column_type_change,
                                "allowSourceColumnTypeChange")):
        # True: every such change; a version (delta-spark's option value): the change that commit made, only.
        if isinstance(value, bool):
            if value:
                options[option] = "always"
        elif isinstance(value, int) and value >= 0:
            options[option] = str(value)
        else:
            raise InvalidOptionError(f"{arg} must be True, False or the version (an int >= 0) of the change to allow; "
                                     f"got {value!r}")
    return options
