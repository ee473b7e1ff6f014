"""``CheckCellMetadata``: nbgrader's check of the cells' nbgrader metadata, by nbgrader's rules, with the metadata
schema itself checked once per notebook: ``jsonschema.validate`` checks it against JSON Schema's meta-schema for
every cell: most of this step's time (a chapter: 110 ms against 18 ms, twice per submission)."""

from __future__ import annotations

import functools
import traceback

from jsonschema import validators
from jsonschema.exceptions import best_match
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata


class _SchemaOnce(BaseMetadataValidator):
    """nbgrader's base check of one cell (its schema version, then the schema), the schema's validator made once."""

    @functools.cached_property
    def _validator(self):
        cls = validators.validator_for(self.schema)
        cls.check_schema(self.schema)
        return cls(self.schema)

    def validate_cell(self, cell) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None or meta.get("schema_version", 0) != self.schema_version:
            return super().validate_cell(cell)  # (nbgrader's own errors for a schema too old or too new)
        if (error := best_match(self._validator.iter_errors(meta))) is not None:
            raise error


class Validator(MetadataValidator, _SchemaOnce):
    """nbgrader's MetadataValidator (its rules first call the base class's check, which is _SchemaOnce's)."""


class CheckCellMetadata(NbgraderCheckCellMetadata):
    def preprocess(self, nb, resources):
        try:
            Validator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            message = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(message)
            raise ValidationError(message) from None
        return nb, resources
