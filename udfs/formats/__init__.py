"""The format registry: format identifier (``format:`` in ``cdc.yml``) -> decoder class.

One module per format, named after its identifier; its tests are
``tests/python/formats/test_<identifier>.py``.
"""

from __future__ import annotations

from udfs.contract import Decoder
from udfs.formats.arcion_internal_csv import ArcionInternalCsvDecoder
from udfs.formats.arcion_internal_json import ArcionInternalJsonDecoder
from udfs.formats.arcion_kafka_json import ArcionKafkaJsonDecoder
from udfs.formats.cdl_json import CdlJsonDecoder
from udfs.formats.debezium_json import DebeziumJsonDecoder
from udfs.formats.dts_avro import DtsAvroDecoder
from udfs.formats.dts_canal_json import CanalJsonDecoder, DtsCanalJsonDecoder
from udfs.formats.dts_shareplex_json import DtsShareplexJsonDecoder
from udfs.formats.lindorm_json import LindormJsonDecoder

_DECODERS: list[type[Decoder]] = [
    DebeziumJsonDecoder,
    ArcionInternalJsonDecoder,
    ArcionInternalCsvDecoder,
    ArcionKafkaJsonDecoder,
    CdlJsonDecoder,
    LindormJsonDecoder,
    DtsCanalJsonDecoder,
    CanalJsonDecoder,
    DtsShareplexJsonDecoder,
    DtsAvroDecoder,
]

#: identifier -> decoder class
FORMATS: dict[str, type[Decoder]] = {d.identifier: d for d in _DECODERS}


def decoder_class(identifier: str) -> type[Decoder]:
    try:
        return FORMATS[identifier]
    except KeyError:
        known = ", ".join(sorted(FORMATS))
        raise ValueError(f"unknown format {identifier!r}; known formats: {known}") from None
