"""Student strings made safe for a person to read: on a terminal, in one row of a table, in a spreadsheet.

A student controls many strings the instructor's commands print: an exception's class name and message, a file
name in a handed-in folder, a cell's source quoted by ``scan`` or ``validate``. Printed raw, a string can carry
terminal escape sequences (erase a line, move the cursor up and print a forged row, set the window title, ask
the terminal to put a shell command in the clipboard with OSC 52), a carriage return that overwrites the start
of its line, a newline that starts a forged row, or Unicode's bidirectional controls that make text read in an
order other than it is stored. A spreadsheet opening the gradebook's CSV runs a cell that starts with ``=``,
``+``, ``-`` or ``@`` as a formula.

* ``printable(text)``: escape sequences removed (colour codes in a traceback are display only), every other
  control character shown escaped (``\\x1b``, ``\\r``, ``\\u202e``); newlines and tabs kept.
* ``one_line(text)``: the same, and newlines and tabs shown escaped too: for one cell of a table row.
* ``spreadsheet_cell(text)``: a CSV cell that a spreadsheet shows as text (OWASP's rule: a leading ``'``
  before a cell that starts with a formula character or a control character).
* ``CleanStream``: a text stream that passes everything written to it through ``printable``; the command line
  (``autograder.__main__``) puts its standard output and error behind one, so that nothing any command, nbgrader
  or a log line prints reaches the terminal unescaped.
"""

from __future__ import annotations

import io
import re

# ESC [ ... final (CSI: cursor moves, erases, colours), ESC ] ... BEL or ESC \ (OSC: titles, clipboard,
# hyperlinks), ESC P/X/^/_ ... ESC \ (DCS, SOS, PM, APC), and the one-character ESC sequences. The 8-bit
# forms (U+009B CSI, U+009D OSC) are C1 controls, escaped below like every other control character.
# A string sequence must end on its own line (else only the ESC goes): it cannot swallow the rows after it.
_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[PX^_][^\x1b\n]*\x1b\\|[@-Z\\-_])?")
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _BIDI + "\u2028\u2029]")
_CONTROL_OR_LINE = re.compile("[\x00-\x1f\x7f-\x9f" + _BIDI + "\u2028\u2029]")
_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text) -> str:
    """``text`` with terminal escape sequences removed and every other control character (but newline and tab)
    shown escaped."""
    return _CONTROL.sub(_escape, _SEQUENCE.sub("", str(text)))


def one_line(text) -> str:
    """``text`` as one line of printable characters: ``printable``, with newlines and tabs escaped too."""
    return _CONTROL_OR_LINE.sub(_escape, _SEQUENCE.sub("", str(text)))


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
    import sys

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, CleanStream):
            setattr(sys, name, CleanStream(stream))
