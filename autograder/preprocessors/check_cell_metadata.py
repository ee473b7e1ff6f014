"""``CheckCellMetadata``: nbgrader's check of every cell's nbgrader metadata, with nbgrader's rules, and the
metadata schema itself checked once per grading process instead of once per cell.

nbgrader checks a cell's metadata with ``jsonschema.validate``, which first checks the *schema* against JSON
Schema's meta-schema, on every call: with about twenty graded cells, checked before and after the notebook
runs, that was most of this step's cost and a few percent of grading a chapter's correct submission. Here the
schema's validator is made once (``_schema_validator``); everything else is nbgrader's ``MetadataValidator``."""

from __future__ import annotations

import functools
import json
import traceback

from jsonschema import validators
from jsonschema.exceptions import best_match
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata


@functools.lru_cache(maxsize=4)
def _schema_validator(schema_text: str):
    """A validator of the schema ``schema_text`` (JSON), the schema checked once, as jsonschema.validate does."""
    schema = json.loads(schema_text)
    cls = validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


class _SchemaOnce(BaseMetadataValidator):
    """nbgrader's per-cell check of the schema version and of the metadata against the schema."""

    def __init__(self) -> None:
        super().__init__()  # (nbgrader's: reads self.schema)
        self._validator = _schema_validator(json.dumps(self.schema))

    def validate_cell(self, cell) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None or meta.get("schema_version", 0) != self.schema_version:
            return super().validate_cell(cell)  # (nbgrader's own errors for a schema too old or too new)
        error = best_match(self._validator.iter_errors(meta))
        if error is not None:
            raise error


class Validator(MetadataValidator, _SchemaOnce):
    """nbgrader's MetadataValidator (its rules first call the base class's check, which is _SchemaOnce's)."""


class CheckCellMetadata(NbgraderCheckCellMetadata):
    """nbgrader's CheckCellMetadata, validating with ``Validator``."""

    def preprocess(self, nb, resources):
        try:
            Validator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            message = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(message)
            raise ValidationError(message) from None
        return nb, resources
