"""Standard attestations of a brain's skills: OpenSSF Model Signing (OMS) and in-toto, made and checked."""
