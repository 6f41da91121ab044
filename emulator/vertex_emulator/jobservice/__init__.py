"""The Vertex AI v1 JobService: its transport-free logic (``service``), the methods, job kinds, errors and
JSON <-> proto conversion it speaks in (``methods``), the List filter language (``filters``) and page
tokens (``page_tokens``), how each v1 field is treated (``fidelity``) and its gRPC server
(``grpc_server``); the REST mapping is the rest package, above the services it dispatches to."""
