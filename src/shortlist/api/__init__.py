"""The HTTP layer: thin routes over the pipelines, one error mapping, auth and client IPs."""
