"""CDC envelopes to one changelog: pandas/Arrow UDFs for Spark SQL, driven by dbt.

The package holds the pure decoders (``udfs.formats``), the Spark registration of the
vectorized UDFs (``udfs.spark_udfs``) and the ``cdc`` command line (``udfs.cli``).
"""

__version__ = "0.1.0"
