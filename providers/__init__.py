"""Judge backends: each module owns an authenticated client and declares its policy.

Imported only by application code, faces and integrations; never by the core.
"""
