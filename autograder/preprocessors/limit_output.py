"""``LimitOutput``: nbgrader's (``max_lines`` lines per cell, ``max_traceback`` traceback lines) plus ``max_chars``
characters per text output: one ``print("x" * 10**8)`` is a single line, which nbgrader's limit lets through."""

from __future__ import annotations

from nbgrader.preprocessors import LimitOutput as NbgraderLimitOutput
from traitlets import Integer


class LimitOutput(NbgraderLimitOutput):
    max_chars = Integer(
        20_000, help="maximum number of characters of each text output of a cell (-1 means no limit)"
    ).tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if self.max_chars == -1 or cell.cell_type != "code":
            return cell, resources
        note = f"\n... Output truncated (more than {self.max_chars} characters) ..."
        for output in cell.outputs:
            if output.output_type == "stream" and len(output.text) > self.max_chars:
                output.text = output.text[: self.max_chars] + note
            elif output.output_type in ("execute_result", "display_data"):
                for mime, value in output.get("data", {}).items():
                    if mime.startswith("text/") and isinstance(value, str) and len(value) > self.max_chars:
                        output.data[mime] = value[: self.max_chars] + note
            elif output.output_type == "error":
                output.evalue = output.evalue[: self.max_chars]
                output.traceback = [line[: self.max_chars] for line in output.traceback]
        return cell, resources
