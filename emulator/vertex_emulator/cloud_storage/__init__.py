"""A local Cloud Storage JSON API over ``--gcs-root``: its HTTP server (``api``), the buckets and objects
as a directory tree (``tree``), ``matchGlob`` (``match_glob``) and the upload formats (``uploads``)."""
