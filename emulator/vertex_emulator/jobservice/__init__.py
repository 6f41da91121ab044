"""The Vertex AI v1 JobService: its transport-free logic (``service``), the List filter language
(``filters``) and page tokens (``page_tokens``), how each v1 field is treated (``fidelity``) and its gRPC
server (``grpc_server``); the REST mapping is rest.py, above the services it dispatches to."""
