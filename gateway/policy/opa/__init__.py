"""The OPA server engine (serve --engine opa, and the second engine of --engine shadow).

client   OpaConnection: opa-python-client's AsyncOpaClient, one session, OpaError
engine   OpaEngine: the PolicyEngine whose queries go to OPA's Data API, fail-closed
push     uploading a policy directory (Policy API + Data API), undone on failure
"""
