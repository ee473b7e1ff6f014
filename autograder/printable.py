"""Student strings made safe for a person to read: on a terminal (no escape sequence, carriage return or
bidirectional control reaches it), in one row of a table, in a spreadsheet (no cell runs as a formula)."""

from __future__ import annotations

import io
import re
import sys

# ESC [ ... final (CSI: cursor moves, erases, colours), ESC ] ... BEL or ESC \ (OSC: titles, clipboard,
# hyperlinks), ESC P/X/^/_ ... ESC \ (DCS, SOS, PM, APC), and the one-character ESC sequences. The 8-bit
# forms (U+009B CSI, U+009D OSC) are C1 controls, escaped below like every other control character.
# A string sequence must end on its own line (else only the ESC goes): it cannot swallow the rows after it.
_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)"
                       r"|[PX^_][^\x1b\n]*\x1b\\|[@-Z\\-_])?")
# C0 and C1 controls but tab and newline, bidirectional controls, line and paragraph separators
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_CONTROL = re.compile(f"[{_CONTROLS}]")
_CONTROL_OR_LINE = re.compile(f"[\t\n{_CONTROLS}]")


def _escaped(match: re.Match) -> str:
    return repr(match.group())[1:-1]  # \x1b, \r, \u202e


def printable(text) -> str:
    """``text`` with terminal escape sequences removed and every other control character (but newline and tab)
    shown escaped."""
    return _CONTROL.sub(_escaped, _SEQUENCE.sub("", str(text)))


def one_line(text) -> str:
    """``text`` as one line of printable characters: ``printable``, with newlines and tabs escaped too."""
    return _CONTROL_OR_LINE.sub(_escaped, _SEQUENCE.sub("", str(text)))


def spreadsheet_cell(text) -> str:
    """``text`` as a CSV cell a spreadsheet shows as text: one line, and a leading ``'`` when it starts with a
    character that makes a formula (``= + - @``) or a tab or carriage return (which some spreadsheets strip
    before looking)."""
    line = one_line(text)
    if line[:1] in ("=", "+", "-", "@") or str(text)[:1] in ("\t", "\r"):
        return "'" + line
    return line


class CleanStream(io.TextIOBase):
    """A text stream that writes ``printable(text)`` of everything to the stream it wraps."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text) -> int:
        self._stream.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self):
        return getattr(self._stream, "encoding", "utf-8")


def guard_standard_streams() -> None:
    """Put this process's standard output and error behind ``CleanStream`` (once): what a command, nbgrader or
    a log handler made after this call prints goes through ``printable``."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, CleanStream):
            setattr(sys, name, CleanStream(stream))
