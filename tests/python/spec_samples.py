"""Vendor sample messages, copied verbatim, shared by the decoder unit tests
(``formats/test_cdl_json.py``, ``formats/test_lindorm_json.py``) and the pipeline test
(``test_pipeline_cdl_lindorm.py``), so that there is one copy of each to check against the spec.

* ``CDL_V1_INSERT``, ``CDL_V2_INSERT``: Huawei CDL, ``specs/huawei-cdl-json-and-debezium-json.txt``
  ("A sample in CDL JSON format", message_version 1.0; "A sample in Debezium JSON format",
  message_version 2.0). Split in string pieces only to fit the line length.
* ``LINDORM_*``: Alibaba Lindorm (Debezium format V2.0), ``specs/lindorm-debezium-format.txt``
  ("Data format description"; the SQL "Sample data for data insert / update / row deletion /
  column deletion records"; the HBase "Sample data for data update records", a put). Indentation
  and trailing blanks trimmed; the JSON is unchanged. Each is one JSON document ending in a
  newline, as landed with the ``documents`` framing.
"""

# fmt: off
# --- specs/huawei-cdl-json-and-debezium-json.txt, "A sample in CDL JSON format" (message_version 1.0)
CDL_V1_INSERT = (
    '{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"DATA_STORE"},{"t'
    'ype":"string","optional":false,"field":"SEG_OWNER"},{"type":"string","optional":false,"field":"T'
    'ABLE_NAME"},{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","v'
    'ersion":1,"field":"TIMESTAMP"},{"type":"string","optional":false,"field":"OPERATION"},{"type":"s'
    'tring","optional":true,"field":"LOB_COLUMNS"},{"type":"struct","fields":[{"type":"array","items"'
    ':{"type":"struct","fields":[{"type":"string","optional":false,"field":"name"},{"type":"int64","o'
    'ptional":false,"field":"value"}],"optional":false},"optional":false,"field":"properties"}],"opti'
    'onal":false,"name":"transaction","field":"transaction"},{"type":"struct","fields":[{"type":"int3'
    '2","optional":false,"field":"id"}],"optional":true,"name":"unique","field":"unique"},{"type":"st'
    'ruct","fields":[{"type":"int64","optional":true,"field":"count1"},{"type":"int32","optional":fal'
    'se,"field":"id"},{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp'
    '","version":1,"field":"time1"},{"type":"string","optional":true,"name":"com.xxx.cdc.data.Decimal'
    '","field":"decimalNum"}],"optional":true,"name":"data","field":"data"},{"type":"struct","fields"'
    ':[{"type":"int64","optional":true,"field":"count1"},{"type":"int32","optional":false,"field":"id'
    '"},{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1,'
    '"field":"time1"},{"type":"string","optional":true,"name":"com.xxx.cdc.data.Decimal","field":"dec'
    'imalNum"}],"optional":true,"name":"before","field":"before"},{"type":"string","optional":false,"'
    'field":"message_version"},{"type":"string","optional":false,"field":"message_type"},{"type":"str'
    'ing","optional":true,"field":"HEARTBEAT_IDENTIFIER"}],"optional":false,"name":"public.ct_pg2hudi'
    '"},"payload":{"DATA_STORE":"POSTGRESQL","SEG_OWNER":"public","TABLE_NAME":"ct_pg2hudi","TIMESTAM'
    'P":1707047996013,"OPERATION":"INSERT","LOB_COLUMNS":null,"transaction":{"properties":[{"name":"l'
    'sn","value":163955221008},{"name":"txId","value":57227595}]},"unique":{"id":34},"data":{"count1"'
    ':13,"id":34,"time1":null,"decimalNum":null},"before":null,"message_version":"1.0","message_type"'
    ':"0","HEARTBEAT_IDENTIFIER":"279fb050-0143-45c1-b184-50bc48c2461c"}}'
)
# --- the same spec, "A sample in Debezium JSON format" (message_version 2.0) -------------
CDL_V2_INSERT = (
    '{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","optional":true,'
    '"field":"count1"},{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":tru'
    'e,"name":"com.xxx.cdc.data.timestamp","field":"time1"},{"type":"string","optional":true,"name":"'
    'com.xxx.cdc.data.Decimal","field":"decimalNum"}],"optional":true,"name":"before","field":"before'
    '"},{"type":"struct","fields":[{"type":"int64","optional":true,"field":"count1"},{"type":"int32",'
    '"optional":false,"field":"id"},{"type":"string","optional":true,"name":"com.xxx.cdc.data.timesta'
    'mp","field":"time1"},{"type":"string","optional":true,"name":"com.xxx.cdc.data.Decimal","field":'
    '"decimalNum"}],"optional":true,"name":"data","field":"after"},{"type":"struct","fields":[{"type"'
    ':"string","optional":false,"field":"version"},{"type":"string","optional":false,"field":"connect'
    'or"},{"type":"string","optional":false,"field":"name"},{"type":"int64","optional":false,"field":'
    '"ts_ms"},{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters'
    '":{"allowed":"true,last,false"},"default":"false","field":"snapshot"},{"type":"string","optional'
    '":false,"field":"db"},{"type":"string","optional":false,"field":"schema"},{"type":"string","opti'
    'onal":false,"field":"table"},{"type":"int64","optional":true,"field":"txId"},{"type":"int64","op'
    'tional":true,"field":"lsn"}],"optional":false,"name":"io.debezium.connector.postgresql.Source","'
    'field":"source"},{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":fals'
    'e,"field":"ts_ms"},{"type":"string","optional":false,"field":"message_version"},{"type":"string"'
    ',"optional":false,"field":"message_type"},{"type":"string","optional":true,"field":"LOB_COLUMNS"'
    '},{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":true,"na'
    'me":"unique","field":"unique"}],"optional":false,"name":"public.ct_pg2hudi"},"payload":{"before"'
    ':null,"after":{"count1":14,"id":35,"time1":null,"decimalNum":null},"source":{"version":"1.4.0.Fi'
    'nal","connector":"postgresql","name":"cdl","ts_ms":1707048891235,"snapshot":"false","db":"cdl","'
    'schema":"public","table":"ct_pg2hudi","txId":57227663,"lsn":163955586912},"op":"c","ts_ms":17070'
    '48984208,"message_version":"2.0","message_type":"0","LOB_COLUMNS":null,"unique":{"id":35}}}'
)
# fmt: on

# --- specs/lindorm-debezium-format.txt: "Data format description", then the SQL samples
# (insert, update, row deletion, column deletion), then the HBase sample ---------------
LINDORM_FORMAT_UPDATE = """\
{
  "payload": {
    "op": "u",
    "ts_ms": 1465491411815,
    "before": {
      "id": 1004,
      "name": "Jane"
    },
    "after": {
      "id": 1004,
      "name": "Anne"
    },
    "source": {
      "version": "v1.0",
      "db": "ld-xxxx",
      "namespace": "default",
      "table": "customers",
      "ts_ms": 1465491411807
    }
  },
  "schema": {
  "type": "struct",
  "fields": [
     {
        "type": "string",
        "optional": false,
        "field": "op"
   }, {
        "type": "int64",
        "optional": false,
        "field": "ts_ms"
   }, {
        "type": "struct",
        "fields": [
          {
            "type": "int32",
            "optional": false,
            "field": "id"
     }, {
            "type": "string",
            "optional": false,
            "field": "name"
          }
        ],
        "optional": true,
        "field": "before"
   }, {
        "type": "struct",
        "fields": [
          {
            "type": "int32",
            "optional": false,
            "field": "id"
     }, {
            "type": "string",
            "optional": false,
            "field": "name"
     }
        ],
        "optional": true,
        "field": "after"
   }, {
        "type": "struct",
        "fields": [
          {
            "type": "string",
            "optional": false,
            "field": "version"
         }, {
            "type": "string",
            "optional": false,
            "field": "db"
     }, {
            "type": "string",
            "optional": false,
            "field": "namespace"
     }, {
            "type": "string",
            "optional": false,
            "field": "table"
     }, {
            "type": "int64",
            "optional": false,
            "field": "ts_ms"
     }
        ],
        "optional": false,
        "field": "source"
   }
    ],
  "optional": false
 }
}
"""
LINDORM_SQL_INSERT = """\
{
  "schema": {},
  "payload": {
    "op": "c",
    "ts_ms": 1465491411815,
    "before": null,
    "after": {
      "id": "1004",
      "first_name": "Anne",
      "last_name": "Kretchmar"
    },
    "source": {
      "version": "v1.0",
      "db": "ld-xxxx",
      "namespace": "default",
      "table": "customers",
      "ts_ms": 1465491411807
    }
  }
}
"""
LINDORM_SQL_UPDATE = """\
{
  "schema": {},
  "payload": {
    "op": "u",
    "ts_ms": 1465491411815,
    "before": {
      "id": "1004",
      "first_name": "Anne Marie",
      "last_name": "Kretchmar"
    },
    "after": {
      "id": "1004",
      "first_name": "Anne",
      "last_name": "Kretchmar"
    },
    "source": {
      "version": "v1.0",
      "db": "ld-xxxx",
      "namespace": "default",
      "table": "customers",
      "ts_ms": 1465491411807
    }
  }
}
"""
LINDORM_SQL_DELETE = """\
{
  "schema": {},
  "payload": {
    "op": "d",
    "ts_ms": 1465491411815,
    "before": {
      "id": "1004",
      "first_name": "Anne Marie",
      "last_name": "Kretchmar"
    },
    "after": null,
    "source": {
      "version": "v1.0",
      "db": "ld-xxxx",
      "namespace": "default",
      "table": "customers",
      "ts_ms": 1465491411807
    }
  }
}
"""
LINDORM_SQL_COLUMN_DELETE = """\
{
  "schema": {},
  "payload": {
    "op": "u",
    "ts_ms": 1465491411815,
    "before": {
      "id": "1004",
      "first_name": "Anne Marie",
      "last_name": "Kretchmar"
    },
    "after": {
      "id": "1004",
      "first_name": "Anne Marie"
    },
    "source": {
      "version": "v1.0",
      "db": "ld-xxxx",
      "namespace": "default",
      "table": "customers",
      "ts_ms": 1465491411807
    }
  }
}
"""
# the HBase "Sample data for data update records": the put of row user1, cell f:name = "lucky"
LINDORM_HBASE_PUT = """\
{
    "schema": {},
    "payload": {
        "op": "c",
        "ts_ms": 1725258859839,
        "before": null,
        "after": {
            "ROW": "dXNlcjE=",
            "f_name": "bHVja3k="
        },
        "source": {
            "version": "v2.0",
            "db": "ld-xxxx",
            "namespace": "default",
            "table": "customers",
            "ts_ms": 1725258833727
        }
    }
}
"""
