"""What every HTTP and gRPC port of the emulator shares: the bounded HTTP server (``httpserve``), who may
call (``callers``) and the linear JSON nesting check (``jsonlimits``). Service-neutral: no service logic."""
