"""Student strings made safe for a person to read: on a terminal, in one row of a table, in a spreadsheet."""

import io
import re
import sys

# ESC [ ... final (CSI), ESC ] ... BEL or ESC \ (OSC), ESC P/X/^/_ ... ESC \ (DCS, SOS, PM, APC), the one-character
# ESC sequences. A string sequence ends on its own line (else only the ESC goes): it cannot swallow the rows after it.
_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)"
                       r"|[PX^_][^\x1b\n]*\x1b\\|[@-Z\\-_])?")
# C0 and C1 controls (8-bit CSI, OSC) but tab and newline, bidirectional controls, line and paragraph separators
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def printable(text) -> str:
    """``text`` with terminal escape sequences removed and every other control character (but newline and tab)
    shown escaped, as Python's repr shows it (``\\x1b``, ``\\r``, ``\\u202e``)."""
    return _CONTROL.sub(lambda match: repr(match.group())[1:-1], _SEQUENCE.sub("", str(text)))


def one_line(text) -> str:
    """``text`` as one line of printable characters: ``printable``, with newlines and tabs escaped too."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def spreadsheet_cell(text) -> str:
    """``text`` as a CSV cell a spreadsheet shows as text: one line, and a leading ``'`` when it starts with a
    character that makes a formula (``= + - @``) or an escaped tab or carriage return (which some spreadsheets
    strip before looking)."""
    line = one_line(text)
    return "'" + line if line.startswith(("=", "+", "-", "@", "\\t", "\\r")) else line


class CleanStream(io.TextIOBase):
    """A text stream that writes ``printable(text)`` of everything to the stream it wraps."""

    encoding = property(lambda self: getattr(self._stream, "encoding", "utf-8"))

    def __init__(self, stream):
        self._stream = stream
        for name in ("flush", "isatty", "fileno", "writable"):  # the wrapped stream's own
            setattr(self, name, getattr(stream, name))

    def write(self, text) -> int:
        self._stream.write(printable(text))
        return len(text)


def guard_standard_streams() -> None:
    """Put this process's standard output and error behind ``CleanStream`` (once): what a command, nbgrader or
    a log handler made after this call prints goes through ``printable``."""
    for name in ("stdout", "stderr"):
        if not isinstance(getattr(sys, name), (CleanStream, type(None))):
            setattr(sys, name, CleanStream(getattr(sys, name)))
