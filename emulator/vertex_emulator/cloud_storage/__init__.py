"""A local Cloud Storage JSON API over ``--gcs-root``: its paths and what each does (``api``), the HTTP side
(``handler``: the listener, callers, bodies, errors), what a request asks for (``routes``), the buckets and
objects as a directory tree (``tree``), their listing (``listing``), ``matchGlob`` (``match_glob``) and the
upload formats (``uploads``)."""
