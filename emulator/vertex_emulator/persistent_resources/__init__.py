"""The Vertex AI v1 PersistentResourceService: its transport-free logic (``service``), the resources'
lifecycle threads (``lifecycle``: provisioning, reboot, delete, recovery), JSON <-> proto conversion
(``convert``), its gRPC handler with the long-running Operations it returns (``grpc_handler``) and its
REST mapping (``rest``)."""
