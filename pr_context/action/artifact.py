"""A pr-context artifact from another workflow run, read in memory within fixed bounds.

The artifact of a fork's ``pull_request`` run is attacker-controlled: the fork can
change that run's workflow, so every byte of the zip may be forged. Nothing here writes
to disk or trusts a size the zip declares. The whole zip is refused when:

- it is larger than ``zip_bytes``, or its end record claims more than ``members``
  entries or a central directory over ``directory_bytes`` (checked before ``zipfile``
  reads the directory, so a directory of millions of entries is never parsed);
- a member name is absolute (``/x``, ``C:x``), holds a backslash, a control character,
  or a ``..``, ``.`` or empty segment, or is not a name the action uploads; a name
  appears twice; a member is encrypted, or compressed other than stored or deflated;
- a member declares more than ``member_bytes`` inflated.

Only ``evidence.json`` is inflated, in chunks, stopped at ``member_bytes`` whatever its
header says (a zip bomb lies about its size), and its CRC is checked at the end.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass

from pr_context.errors import ArtifactError

__all__ = [
    "DEFAULT_LIMITS",
    "EVIDENCE_MEMBER",
    "UPLOADED_MEMBERS",
    "ArtifactLimits",
    "evidence_member",
]

EVIDENCE_MEMBER = "evidence.json"
# What action.yml's upload step puts into the artifact (paths below its out folder).
UPLOADED_MEMBERS = frozenset({EVIDENCE_MEMBER, "comment.md", "summary.md",
                              "action-report.json", "eval/report.md", "eval/report.json"})
_UPLOADED_FOLDERS = frozenset({"eval/"})  # a zip may list the folder itself
_READ_CHUNK_BYTES = 64 * 1024
_END_RECORD = struct.Struct("<4s4H2LH")  # signature, disks, entries, directory size/offset
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_END_RECORD = struct.Struct("<4sQ2H2L4Q")
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class ArtifactLimits:
    """Bounds on what is read; an artifact past any of them is refused whole."""

    zip_bytes: int = 16 * 1024 * 1024  # the download; evidence compresses about 10x
    member_bytes: int = 32 * 1024 * 1024  # evidence.json inflated
    members: int = 16  # the action uploads at most six files
    directory_bytes: int = 64 * 1024  # the central directory of that many entries


DEFAULT_LIMITS = ArtifactLimits()


def evidence_member(data: bytes, limits: ArtifactLimits = DEFAULT_LIMITS) -> bytes | None:
    """``evidence.json`` from the artifact's zip, or None when the zip has none.

    A run that reviewed nothing (a draft, an event with no code change) uploads only
    ``action-report.json``.

    :raises ArtifactError: the zip breaks any rule above.
    """
    if len(data) > limits.zip_bytes:
        raise ArtifactError(f"the artifact is {len(data):,} bytes, over the "
                            f"{limits.zip_bytes:,}-byte cap")
    _check_directory(data, limits)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            _check_members(infos, limits)
            found = [i for i in infos if i.filename == EVIDENCE_MEMBER]
            return _read_member(archive, found[0], limits) if found else None
    except (zipfile.BadZipFile, zlib.error, EOFError, struct.error, ValueError,
            NotImplementedError, RuntimeError) as exc:
        raise ArtifactError(f"the artifact is not a readable zip ({exc})") from exc


def _check_directory(data: bytes, limits: ArtifactLimits) -> None:
    """The end record's entry count and directory size, zip64 included, within bounds."""
    start = data.rfind(b"PK\x05\x06", max(0, len(data) - _END_RECORD.size - 0xFFFF))
    if start < 0 or start + _END_RECORD.size > len(data):
        raise ArtifactError("the artifact is not a zip file (no end record)")
    fields = _END_RECORD.unpack_from(data, start)
    entries, size = max(fields[3], fields[4]), fields[5]
    locator = start - _ZIP64_LOCATOR.size
    if locator >= 0 and data[locator:locator + 4] == b"PK\x06\x07":
        entries, size = _zip64_directory(data, locator)
    if entries > limits.members or size > limits.directory_bytes:
        raise ArtifactError(f"the artifact lists {entries:,} entries in a {size:,}-byte "
                            f"directory; at most {limits.members} entries are expected")


def _zip64_directory(data: bytes, locator: int) -> tuple[int, int]:
    end = locator - _ZIP64_END_RECORD.size
    if end < 0 or data[end:end + 4] != b"PK\x06\x06":
        raise ArtifactError("the artifact's zip64 end record is missing")
    fields = _ZIP64_END_RECORD.unpack_from(data, end)
    return max(fields[6], fields[7]), fields[8]


def _check_members(infos: list[zipfile.ZipInfo], limits: ArtifactLimits) -> None:
    if len(infos) > limits.members:
        raise ArtifactError(f"the artifact has {len(infos)} entries, over {limits.members}")
    twice = [name for name, n in Counter(i.orig_filename for i in infos).items() if n > 1]
    if twice:
        raise ArtifactError(f"the artifact lists a member twice ({_shown(twice[0])})")
    for info in infos:
        refusal = _name_refusal(info.orig_filename) or _content_refusal(info, limits)
        if refusal:
            raise ArtifactError(f"the artifact is refused whole: member "
                                f"{_shown(info.orig_filename)} {refusal}")


def _name_refusal(name: str) -> str | None:
    """Why a member name is refused (the whole zip with it), or None."""
    if _CONTROL.search(name):
        return "holds a control character"
    if name.startswith("/") or _DRIVE.match(name) or "\\" in name:
        return "is an absolute path or has a backslash"
    if any(part in ("", ".", "..") for part in name.removesuffix("/").split("/")):
        return "has a `..`, `.` or empty path segment"
    if name not in UPLOADED_MEMBERS and name not in _UPLOADED_FOLDERS:
        return "is not a file pr-context uploads"
    return None


def _content_refusal(info: zipfile.ZipInfo, limits: ArtifactLimits) -> str | None:
    if info.flag_bits & 0x1:
        return "is encrypted"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return f"uses compression method {info.compress_type}"
    if info.file_size > limits.member_bytes:
        return f"declares {info.file_size:,} bytes, over the {limits.member_bytes:,}-byte cap"
    return None


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo,
                 limits: ArtifactLimits) -> bytes:
    """The member inflated, stopped past ``member_bytes`` (the header may lie)."""
    body = bytearray()
    with archive.open(info) as member:
        while chunk := member.read(_READ_CHUNK_BYTES):
            body += chunk
            if len(body) > limits.member_bytes:
                raise ArtifactError(f"{info.filename} inflates past the "
                                    f"{limits.member_bytes:,}-byte cap (a zip bomb?)")
    return bytes(body)


def _shown(name: str) -> str:
    """A member name for a message: quoted, control characters escaped, cut short."""
    return ascii(name[:80])
